"""The machinery shared by every model of the zoo.

:class:`Autoencoder` is a ``keras.Model`` with a custom ``train_step``: subclasses
implement ``_forward`` (the loss terms of one batch) and ``_codes`` (posterior means),
and the base class does the rest: input checks, the optimiser step, a step counter
kept in a non-trainable variable (so schedules resume after ``load_model``),
per-step random seeds derived from ``(random_state, step)`` (so a reloaded model draws the
same noise a model trained without interruption would have drawn), loss terms
reported as Keras metrics, ``encode`` / ``decode`` to numpy, and ``get_config``.

Under a ``tf.distribute`` strategy (build and compile the model inside its scope)
each replica weights its loss by its share of the global batch, draws its rows of
the global batch's noise and reports its metrics weighted by that share, so that
training on R replicas follows single-device training on the global batches (see
:mod:`hier_models.distribute`).
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from hier_datasets.validation import check_choice, check_input_shape, check_positive, check_seed
from hier_models import distribute, losses

__all__ = ["Autoencoder", "DEFAULT_OBSERVATION_STD", "LatestValue"]

#: Gaussian likelihood std whose NLL is 100 x the sum of squared errors (the
#: reconstruction loss of the Chopsticks reference implementation) plus a constant.
DEFAULT_OBSERVATION_STD = 200.0**-0.5

_COMPILE_LOSS_ARGS = ("loss", "loss_weights", "metrics", "weighted_metrics")


class LatestValue(keras.metrics.Metric):
    """A metric that reports the value of its last update (for schedule values, the
    same on every replica: read from the first)."""

    def __init__(self, name: str, **kwargs):
        super().__init__(name=name, **kwargs)
        self.value = self.add_variable(shape=(), initializer="zeros", name="value", aggregation="only_first_replica")

    def update_state(self, value):
        self.value.assign(ops.cast(value, self.dtype))

    def result(self):
        return ops.convert_to_tensor(self.value)


class _PerModel:
    """A callable wrapper: TensorFlow counts the traces of a tf.function by its Python
    function's code, which every model shares; an object keeps each model's count apart."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, batch):
        return self.fn(batch)


class Autoencoder(keras.Model):
    """Base class of every model; use one of them (``AE``, ``VAE``, ...) instead.

    Subclasses forward these keyword arguments here (they are every model's ``**kwargs``).

    Args:
      input_shape: shape of one observation, e.g. ``(64,)`` for a Chopsticks series or
        ``(64, 64, 3)`` for a Boxhead image.
      likelihood: the decoder's observation model. ``"bernoulli"``: the decoder outputs
        logits and observations must lie in [0, 1] (Spaceshapes, Ross & Doshi-Velez
        2021, appendix A.1); ``"gaussian"``: it outputs means with the fixed standard
        deviation ``observation_std`` (Chopsticks, same appendix). Default (None):
        ``"bernoulli"`` for images (rank-3 shapes), ``"gaussian"`` otherwise.
      observation_std: the Gaussian likelihood's standard deviation sigma > 0, default
        ``200 ** -0.5``: its negative log-likelihood is 100 x the sum of squared errors
        plus a constant, the reconstruction loss of the Chopsticks reference
        implementation. Unused with ``"bernoulli"``.
      random_state: integer seed >= 0 (or a numpy ``Generator``, which gives one draw)
        of the model's sampling noise: the reparameterised samples and the TC
        discriminators' permutations of training step t are stateless draws from
        ``(random_state, t)``. Default (None): drawn at random and stored in the config,
        so a saved model resumes with the same noise. Network weights are initialised
        by Keras (``keras.utils.set_random_seed``).
      **kwargs: ``name`` and ``trainable``, as for any ``keras.Model``.

    Raises:
      ValueError: an invalid ``input_shape``, ``likelihood`` or ``observation_std``, or a
        negative ``random_state``.
      TypeError: a ``random_state`` that is neither an integer nor a ``Generator``.
      RuntimeError: Keras runs on a backend other than TensorFlow.

    Example:
      >>> import keras
      >>> import hier_models
      >>> keras.utils.set_random_seed(0)
      >>> hier_models.AE((8,), latent_dim=2, hidden_units=(4,), random_state=7).get_config()["random_state"]
      7
    """

    #: names of the Mean metrics reported by ``fit`` (set by subclasses)
    loss_terms: tuple = ("loss", "reconstruction")

    def __init__(
        self,
        input_shape,
        *,
        likelihood: str | None = None,
        observation_std: float = DEFAULT_OBSERVATION_STD,
        random_state: int | np.random.Generator | None = None,
        **kwargs,
    ):
        if keras.backend.backend() != "tensorflow":
            raise RuntimeError(
                f"hier_models needs the TensorFlow backend of Keras, got {keras.backend.backend()!r} "
                "(set KERAS_BACKEND=tensorflow)"
            )
        super().__init__(**kwargs)
        self.observation_shape = check_input_shape(input_shape)
        default = "bernoulli" if len(self.observation_shape) == 3 else "gaussian"
        self.likelihood = check_choice(default if likelihood is None else likelihood, "likelihood", losses.LIKELIHOODS)
        self.observation_std = check_positive(observation_std, "observation_std")
        if random_state is None:
            random_state = int(np.random.SeedSequence().entropy % (2**31))
        self.random_state = check_seed(random_state)
        # every replica counts the same steps: the first replica's count is the model's
        self._step = self.add_weight(
            shape=(), dtype="int64", initializer="zeros", trainable=False, name="step", aggregation="only_first_replica"
        )
        self._config = {
            "input_shape": list(self.observation_shape),
            "likelihood": self.likelihood,
            "observation_std": self.observation_std,
            "random_state": self.random_state,
        }
        self._graphs = {}

    # ------------------------------------------------------------ subclass API
    def _finish_init(self, schedule_names=()):
        """Create the metric trackers; call at the end of a subclass ``__init__``."""
        trackers = {name: keras.metrics.Mean(name=name) for name in self.loss_terms}
        trackers.update({name: LatestValue(name) for name in schedule_names})
        self._trackers = trackers
        self.built = True

    def _forward(self, x, training: bool):
        """Loss terms of one batch: ``(terms, aux)``; ``terms["loss"]`` is minimised."""
        raise NotImplementedError

    def _codes(self, x):
        """Posterior means (or deterministic codes) of a batch, inference mode."""
        raise NotImplementedError

    def _decode_tensor(self, z):
        """Decoder outputs (logits or means) for codes ``z``, inference mode."""
        raise NotImplementedError

    def _auxiliary_step(self, aux, training: bool) -> dict:
        """Extra work after the main update (e.g. a discriminator step); returns terms."""
        return {}

    def _main_variables(self) -> list:
        """Variables updated by ``self.optimizer``."""
        return list(self.trainable_variables)

    def schedule(self, step: int | None = None) -> dict:
        """Values of the model's schedules at ``step`` (default: the current step)."""
        return {}

    # ---------------------------------------------------------------- helpers
    @property
    def step(self) -> int:
        """Training steps taken so far (restored by ``keras.models.load_model``)."""
        return int(self._step.numpy())

    def _seed(self, salt: int):
        """A stateless seed for this step; ``salt`` tells the draws of one step apart."""
        base = tf.stack([tf.constant(self.random_state, tf.int64), tf.convert_to_tensor(self._step)])
        return tf.random.experimental.stateless_fold_in(base, salt)

    def _sample(self, mean, logvar, salt: int):
        """``mean + exp(logvar / 2) * eps`` with standard normal ``eps`` drawn for the
        whole batch from :meth:`_seed`; a replica takes its rows of the global
        batch's draw (:func:`hier_models.distribute.batch_share`)."""
        share = distribute.batch_share(tf.shape(mean)[0])
        if share is None:
            eps = tf.random.stateless_normal(tf.shape(mean), seed=self._seed(salt), dtype=mean.dtype)
        else:
            shape = tf.concat([tf.reshape(share.total, [1]), tf.shape(mean)[1:]], axis=0)
            eps = tf.random.stateless_normal(shape, seed=self._seed(salt), dtype=mean.dtype)
            eps = distribute.local_rows(eps, share)
        return mean + ops.exp(0.5 * logvar) * eps

    def _reconstruction(self, x, out):
        """Batch mean of the negative log-likelihood of ``x`` under decoder outputs ``out``."""
        if self.likelihood == "bernoulli":
            return ops.mean(losses.bernoulli_nll(x, out))
        return ops.mean(losses.gaussian_nll(x, out, self.observation_std))

    def _mean_observation(self, out):
        return ops.sigmoid(out) if self.likelihood == "bernoulli" else out

    def _observations(self, data):
        """The observation tensor of one batch of ``fit`` / ``evaluate`` data."""
        if isinstance(data, dict):
            raise ValueError(
                f"{type(self).__name__} got a batch of dicts (keys {sorted(data)}); feed observations or "
                "(observation, anything) pairs, e.g. from hier_models.pipeline(...)"
            )
        if isinstance(data, (tuple, list)):
            data = data[0]
        x = tf.convert_to_tensor(data)
        if not x.dtype.is_floating:
            raise ValueError(
                f"observations must be floats (images scaled to [0, 1]), got dtype {x.dtype.name}; "
                "hier_models.pipeline(...) converts and scales them"
            )
        self._check_shape(tuple(x.shape[1:]), len(x.shape))
        return tf.cast(x, "float32")

    def _check_shape(self, shape, rank):
        expected = self.observation_shape
        if rank != len(expected) + 1 or any(d is not None and d != e for d, e in zip(shape, expected)):
            raise ValueError(
                f"{type(self).__name__} was built for observations of shape {expected} (batches of shape "
                f"(n, {', '.join(map(str, expected))})), got a batch of shape (n, {', '.join(map(str, shape))})"
            )

    def _record(self, terms: dict, share: distribute.BatchShare | None = None) -> dict:
        """Update the metrics with one batch's terms. A replica's terms are means over
        its rows, weighted by its share of the global batch, so that the metrics read
        across replicas are the means over global batches."""
        for name, tracker in self._trackers.items():
            if share is None or isinstance(tracker, LatestValue):
                tracker.update_state(terms[name])
            else:  # a replica without rows has NaN means and weight 0
                value = tf.cast(terms[name], tf.float32)
                tracker.update_state(tf.where(share.size > 0, value, tf.zeros_like(value)), sample_weight=share.fraction)
        logs = {name: tracker.result() for name, tracker in self._trackers.items()}
        return distribute.step_outputs(logs, self.distribute_strategy)

    # ------------------------------------------------------------- training
    @property
    def metrics(self):
        return list(self._trackers.values())

    def _forward_batch(self, data, training: bool):
        """Loss terms of one ``fit`` / ``evaluate`` batch (observations or pairs)."""
        return self._forward(self._observations(data), training=training)

    def train_step(self, data):
        share = distribute.batch_share(_batch_rows(data))
        with tf.GradientTape() as tape:
            terms, aux = self._forward_batch(data, training=True)
            # a replica's loss is a mean over its rows; the optimiser sums the replicas' gradients
            loss = terms["loss"] if share is None else terms["loss"] * share.fraction
            objective = self.optimizer.scale_loss(loss)  # loss scaling under mixed_float16
        variables = self._main_variables()
        grads = tape.gradient(objective, variables)
        pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
        self.optimizer.apply_gradients(pairs)
        terms.update(self._auxiliary_step(aux, training=True))
        self._step.assign_add(1)
        return self._record(terms, share)

    def test_step(self, data):
        share = distribute.batch_share(_batch_rows(data))
        terms, aux = self._forward_batch(data, training=False)
        terms.update(self._auxiliary_step(aux, training=False))
        return self._record(terms, share)

    def call(self, x, training=False):
        """Reconstructions (likelihood means) of ``x`` from its posterior means."""
        return self._mean_observation(self._decode_tensor(self._codes(x)))

    def fit(self, x=None, y=None, *args, shuffle=None, **kwargs):
        """As ``keras.Model.fit``; ``shuffle`` defaults to True for arrays only (a
        ``tf.data`` pipeline such as :func:`hier_models.pipeline` shuffles itself, and
        Keras would warn that it ignores ``shuffle``)."""
        if shuffle is None:
            shuffle = not isinstance(x, tf.data.Dataset)
        return super().fit(x, y, *args, shuffle=shuffle, **kwargs)

    def compile(self, optimizer="adam", **kwargs):
        """Set the optimiser (default Adam, learning rate 1e-3) and Keras options.

        The models compute their own losses and metrics, so ``loss``, ``metrics`` and
        their weights are refused.
        """
        for arg in _COMPILE_LOSS_ARGS:
            if kwargs.get(arg) is not None:
                raise ValueError(
                    f"{type(self).__name__} computes its own loss and metrics; compile() takes optimizer= "
                    f"(and Keras options such as jit_compile), got {arg}={kwargs[arg]!r}"
                )
        self._check_strategy()
        with self.distribute_strategy.scope():
            super().compile(optimizer=self._scoped_optimizer(optimizer, "optimizer"), **kwargs)
            self.optimizer.build(self._main_variables())

    def _check_strategy(self):
        """ValueError when compiling inside the scope of a strategy that the model was
        not built in (its variables would live on the wrong devices)."""
        if tf.distribute.has_strategy() and tf.distribute.get_strategy() is not self._distribute_strategy:
            raise ValueError(
                f"{type(self).__name__} was built outside the scope of the current tf.distribute strategy; "
                "build the model inside strategy.scope() (and compile it there)"
            )

    def _scoped_optimizer(self, optimizer, what: str) -> keras.optimizers.Optimizer:
        """``optimizer`` (an instance, name or config) as an optimiser of the model's
        strategy: one created outside the strategy's scope and not yet built is
        recreated inside it from its config (learning-rate schedule included)."""
        with self.distribute_strategy.scope():
            optimizer = keras.optimizers.get(optimizer)
            inner = optimizer.inner_optimizer if isinstance(optimizer, keras.optimizers.LossScaleOptimizer) else optimizer
            owners = [getattr(o, "_distribution_strategy", None) for o in (optimizer, inner)]
            if all(owner is None or owner is self.distribute_strategy for owner in owners):
                return optimizer
            if optimizer.built:
                raise ValueError(
                    f"{what} was created and used outside the scope of the model's tf.distribute strategy; "
                    "create it inside strategy.scope() or pass a fresh one"
                )
            return type(optimizer).from_config(optimizer.get_config())

    def compile_from_config(self, config):
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)

    # ------------------------------------------------------------ inference
    def _graph(self, key, fn, width):
        """A tf.function of ``fn`` for float32 batches of ``width``, traced once per model."""
        if key not in self._graphs:
            signature = [tf.TensorSpec((None, *width), tf.float32)]
            self._graphs[key] = tf.function(_PerModel(fn), input_signature=signature)
        return self._graphs[key]

    def _batched(self, fn, x, batch_size: int, shape: tuple, what: str) -> np.ndarray:
        if isinstance(x, tf.data.Dataset):
            return self._batched_dataset(fn, x, batch_size, shape, what)
        arr = np.asarray(x)
        if arr.ndim != len(shape) + 1 or arr.shape[1:] != shape:
            raise ValueError(f"{what} must have shape (n, {', '.join(map(str, shape))}), got {arr.shape}")
        self._check_values(arr, what)
        parts = [fn(tf.constant(arr[i : i + batch_size], tf.float32)).numpy() for i in range(0, len(arr), batch_size)]
        return np.concatenate(parts) if parts else self._empty(fn, shape)

    def _empty(self, fn, shape):
        return fn(tf.zeros((0, *shape), tf.float32)).numpy()

    def _batched_dataset(self, fn, ds, batch_size, shape, what):
        spec = ds.element_spec
        if isinstance(spec, (tuple, list)):
            ds = ds.map(lambda *parts: parts[0])
            spec = ds.element_spec
        if isinstance(spec, dict) or not isinstance(spec, tf.TensorSpec):
            raise ValueError(f"{what}: the dataset must yield observations or (observation, anything) pairs")
        if len(spec.shape) == len(shape):
            ds = ds.batch(batch_size)
        parts = []
        for batch in ds:
            arr = batch.numpy()
            if arr.ndim != len(shape) + 1 or arr.shape[1:] != shape:
                raise ValueError(f"{what} must have shape (n, {', '.join(map(str, shape))}), got batches of {arr.shape}")
            self._check_values(arr, what)
            parts.append(fn(tf.constant(arr, tf.float32)).numpy())
        return np.concatenate(parts) if parts else self._empty(fn, shape)

    def _check_values(self, arr: np.ndarray, what: str):
        if what != "x":
            return
        if not np.issubdtype(arr.dtype, np.floating):
            raise ValueError(
                f"x must hold floats (images scaled to [0, 1]), got dtype {arr.dtype}; "
                "hier_models.pipeline(...) converts and scales observations"
            )
        if self.likelihood == "bernoulli" and arr.size and (arr.min() < 0 or arr.max() > 1):
            raise ValueError(
                f"x must lie in [0, 1] for a Bernoulli likelihood, got values in [{arr.min()}, {arr.max()}]; "
                "scale images by their maximum value (hier_models.pipeline does)"
            )

    def encode(self, x, batch_size: int = 256) -> np.ndarray:
        """Posterior means (deterministic codes for ``AE``) as a numpy array ``(n, latent_dim)``.

        ``x`` is an array of observations ``(n, *input_shape)`` (floats; images in
        [0, 1]) or a ``tf.data.Dataset`` of observations or (observation, anything)
        pairs, batched or not.
        """
        fn = self._graph("encode", self._codes, self.observation_shape)
        return self._batched(fn, x, batch_size, self.observation_shape, "x")

    def decode(self, z, batch_size: int = 256) -> np.ndarray:
        """Likelihood means (probabilities for Bernoulli) of codes ``z`` ``(n, latent_dim)``."""
        fn = self._graph("decode", lambda z: self._mean_observation(self._decode_tensor(z)), (self.latent_dim,))
        return self._batched(fn, z, batch_size, (self.latent_dim,), "z")

    # ---------------------------------------------------------------- config
    def get_config(self) -> dict:
        return {"name": self.name, "trainable": self.trainable, **self._config}

    @classmethod
    def from_config(cls, config):
        """The model of a ``get_config()`` dict."""
        return cls(**config)


def _batch_rows(data):
    """Rows of one ``fit`` / ``evaluate`` batch (observations, pairs or a dict)."""
    return tf.shape(tf.nest.flatten(data)[0])[0]
