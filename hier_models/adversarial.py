"""The density-ratio discriminator shared by FactorVAE and COFHAE.

A discriminator tells codes ``z`` drawn from the joint (label 1) from codes whose
dimensions were shuffled across the batch (label 0). Its logit estimates
``log q(z) / prod_d q(z_d)``, so its mean over a batch estimates the total
correlation that the encoder is penalised with (Kim & Mnih 2018).
"""
from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from hier_datasets.validation import check_units
from hier_models import distribute
from hier_models.networks import OUTPUT_DTYPE

__all__ = [
    "Adversarial", "build_discriminator", "default_discriminator_optimizer", "discriminator_step", "matching_adam",
]


#: ``discriminator_dtype`` choices: None follows the model's dtype policy
DISCRIMINATOR_DTYPES = (None, "float32", "mixed_bfloat16", "mixed_float16")


def build_discriminator(latent_dim: int, units=(1000,) * 6, name: str = "discriminator", dtype=None) -> keras.Model:
    """Codes -> one logit (code drawn from q(z) rather than prod_d q(z_d)); leaky ReLU MLP.

    ``dtype`` is the hidden layers' dtype policy (None: the global policy). The
    discriminator does most of the arithmetic of FactorVAE and COFHAE (e.g. 3 x 1000
    units beside an autoencoder of 2 x 256), and ``"mixed_bfloat16"`` runs it in 16
    bits (variables, logit and losses stay float32): about 2x faster on CPUs with
    bfloat16 instructions (AVX512-BF16, AMX) and on recent GPUs.
    """
    units = check_units(units, "discriminator_units")
    if dtype not in DISCRIMINATOR_DTYPES:
        raise ValueError(f"discriminator_dtype must be one of {list(DISCRIMINATOR_DTYPES)}, got {dtype!r}")
    z = keras.Input((latent_dim,), name=f"{name}_input")
    h = z
    for i, width in enumerate(units, start=1):
        h = keras.layers.Dense(width, activation="leaky_relu", name=f"{name}_{i}_dense", dtype=dtype)(h)
    logit = keras.layers.Dense(1, name=f"{name}_logit", dtype=OUTPUT_DTYPE)(h)
    return keras.Model(z, logit, name=name)


def default_discriminator_optimizer() -> keras.optimizers.Optimizer:
    """Adam(1e-4, beta_1=0.5, beta_2=0.9), the FactorVAE paper's discriminator optimiser."""
    return keras.optimizers.Adam(learning_rate=1e-4, beta_1=0.5, beta_2=0.9)


def matching_adam(optimizer) -> keras.optimizers.Optimizer:
    """A fresh Adam with Keras's default betas at ``optimizer``'s learning rate.

    A learning-rate schedule is copied (from its config), so the new optimiser follows
    the same decays as ``optimizer`` over its own step count; a
    ``LossScaleOptimizer`` is looked through to the optimiser it wraps.
    """
    optimizer = keras.optimizers.get(optimizer)
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        optimizer = optimizer.inner_optimizer
    learning_rate = optimizer.get_config()["learning_rate"]
    if isinstance(learning_rate, dict):
        learning_rate = keras.optimizers.schedules.deserialize(learning_rate)
    return keras.optimizers.Adam(learning_rate=learning_rate)


def discriminator_step(discriminator, optimizer, real, fake, weight=None) -> dict:
    """Logistic loss on ``real`` (label 1) vs ``fake`` (label 0); one optimiser step
    unless ``optimizer`` is None. Returns ``discriminator_loss`` and ``_accuracy``.

    ``weight`` (default 1) multiplies the loss that is differentiated: a replica's
    share of the global batch under a ``tf.distribute`` strategy, whose optimiser
    sums the replicas' gradients."""
    real, fake = tf.stop_gradient(real), tf.stop_gradient(fake)
    variables = discriminator.trainable_variables
    with tf.GradientTape() as tape:
        real_logit = discriminator(real)
        fake_logit = discriminator(fake)
        loss = 0.5 * (ops.mean(ops.softplus(-real_logit)) + ops.mean(ops.softplus(fake_logit)))
        weighted = loss if weight is None else loss * weight
        objective = weighted if optimizer is None else optimizer.scale_loss(weighted)
    if optimizer is not None:
        grads = tape.gradient(objective, variables)
        optimizer.apply_gradients(zip(grads, variables))
    hits = ops.concatenate([ops.cast(real_logit > 0, "float32"), ops.cast(fake_logit <= 0, "float32")], axis=0)
    return {"discriminator_loss": loss, "discriminator_accuracy": ops.mean(hits)}


class Adversarial:
    """Mixin for an :class:`~hier_models.base.Autoencoder` with a ``self.discriminator``:
    its own optimiser, kept out of the main update and saved with the compile config."""

    discriminator_optimizer = None

    def _default_discriminator_optimizer(self) -> keras.optimizers.Optimizer:
        """The discriminator's optimiser when ``compile`` is given none (called after
        the main optimiser is set): :func:`default_discriminator_optimizer`."""
        return default_discriminator_optimizer()

    def _main_variables(self):
        own = {id(v) for v in self.discriminator.trainable_variables}
        return [v for v in self.trainable_variables if id(v) not in own]

    def _permuted_codes(self, codes, permute, *more) -> tuple:
        """``(real, fake, share)``: this replica's ``codes`` and its rows of
        ``permute(global codes, *global more, seed)``, a permutation across the global
        batch (gathered from every replica; one device's batch is the global batch),
        and the replica's :class:`~hier_models.distribute.BatchShare` (None on one)."""
        codes = tf.stop_gradient(codes)
        share = distribute.batch_share(tf.shape(codes)[0])
        everything = [distribute.gather_rows(v, share) for v in (codes, *more)]
        fake = distribute.local_rows(permute(*everything, self._seed(1)), share)
        return codes, fake, share

    def _discriminator_step(self, real, fake, training: bool, share=None) -> dict:
        optimizer = self.discriminator_optimizer if training else None
        return discriminator_step(self.discriminator, optimizer, real, fake, None if share is None else share.fraction)

    def compile(self, optimizer="adam", discriminator_optimizer=None, **kwargs):
        """As :meth:`Autoencoder.compile`, plus the discriminator's own optimiser
        (default: the model's ``_default_discriminator_optimizer``)."""
        super().compile(optimizer=optimizer, **kwargs)
        with self.distribute_strategy.scope():  # the second optimiser's variables beside the model's
            if discriminator_optimizer is None:
                discriminator_optimizer = self._default_discriminator_optimizer()
            discriminator_optimizer = self._scoped_optimizer(discriminator_optimizer, "discriminator_optimizer")
            if self.dtype_policy.name == "mixed_float16" and not isinstance(
                discriminator_optimizer, keras.optimizers.LossScaleOptimizer
            ):  # as Keras does for the main optimiser
                discriminator_optimizer = keras.optimizers.LossScaleOptimizer(discriminator_optimizer)
            self.discriminator_optimizer = discriminator_optimizer
            self.discriminator_optimizer.build(self.discriminator.trainable_variables)

    def get_compile_config(self):
        config = super().get_compile_config()
        if config and self.discriminator_optimizer is not None:
            config["discriminator_optimizer"] = keras.saving.serialize_keras_object(self.discriminator_optimizer)
        return config
