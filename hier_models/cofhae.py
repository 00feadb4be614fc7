"""COFHAE: a hierarchical autoencoder with a conditional factorisation penalty.

Ross & Doshi-Velez (2021), section 5.2 and appendix A.1. The encoder emits one value
per continuous dimension of a dimension hierarchy and one logit per option of each
categorical. The *hierarchical encoding* turns them into the decoder's input:

- ``p_c = softmax(logits_c / tau)`` for each categorical ``c``;
- each continuous value ``z_d`` is multiplied by the product of the option
  probabilities along its path, ``m_d = prod_{(c, o) above d} p_c[o]``; each
  categorical's probabilities by the same product for its own path;
- the decoder gets ``concat(masked option probabilities, masked z)``. At inference
  the assignments are hard (argmax), so inactive dimensions are exactly 0.

The loss is ``L_x + lambda_assign * L_a + lambda_tc * TC``:

- ``L_a``: squared error between each categorical's *masked* probabilities ``a'``
  (appendix Algorithm 8: its softmax times the product of the option probabilities
  above it, as the decoder sees them) and the one-hot of its target option, only
  where the target is defined (MIMOSA's assignments; -1 = undefined). A nested
  target therefore also pushes up the probability of the parent options on its path;
- ``TC``: a discriminator (3 x 1000 leaky ReLU) tells the masked codes from the same
  codes with each dimension permuted across the batch *only among the rows where it
  is active* (``on(Z_d)``); the encoder is penalised by the discriminator's logit, an
  estimate of the log density ratio (FactorVAE style); the discriminator has its own
  optimiser and takes one step per autoencoder step. By default that optimiser is an
  Adam with default betas at the main learning rate, following its schedule (e.g.
  1e-3, then /10 at 50% and /100 at 75% of training, appendix A.1), as in the
  authors' implementation; FactorVAE's constant Adam(1e-4, 0.5, 0.9) would learn
  the density ratio 10x slower for the first half of training.

The ablations of the paper's figures 4 and 10 are switches (see :data:`ABLATIONS`).
``encode`` returns codes in the hierarchy's flat layout, encoded as the datasets'
factors (categoricals as option index + 1, inactive dimensions 0), which
``hier_metrics.r4c`` scores directly.
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from hier_datasets.hierarchy import Hierarchy
from hier_datasets.validation import check_choice, check_non_negative, check_positive, check_positive_int, check_units
from hier_models import losses
from hier_models.adversarial import Adversarial, build_discriminator, matching_adam
from hier_models.base import DEFAULT_OBSERVATION_STD, Autoencoder
from hier_models.networks import build_decoder, build_encoder

__all__ = [
    "ABLATIONS", "COFHAE", "HierarchicalEncoding", "conditional_permute", "targets_from_assignments", "targets_from_factors",
]

#: ablation name -> (assignment supervision, TC penalty, supervised continuous codes)
ABLATIONS = {
    "H": (False, "none", False),
    "H+A": (True, "none", False),
    "H+A+TC(Z)": (True, "marginal", False),
    "H+A+TC(Z|on)": (True, "conditional", False),
    "H+TC(Z|on)": (False, "conditional", False),
    "H+A+Z": (True, "none", True),
}


class HierarchicalEncoding:
    """Index tables that map encoder outputs to a hierarchy's masked codes.

    Encoder output layout: the continuous dimensions (in flat-layout order), then the
    option logits of each categorical (in flat-layout order). Decoder input layout:
    the masked option probabilities, then the masked continuous values.
    """

    def __init__(self, hierarchy: Hierarchy):
        self.hierarchy = h = hierarchy
        self.continuous = np.flatnonzero(~h.is_categorical)
        self.categorical = np.flatnonzero(h.is_categorical)
        sizes = h.num_options[self.categorical]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])[:-1].astype(np.int64)
        self.num_options = int(sizes.sum())
        self.num_continuous = len(self.continuous)
        self.encoder_width = self.num_continuous + self.num_options
        cat_pos = {int(d): i for i, d in enumerate(self.categorical)}
        depth = max([len(c) for c in h.conditions] + [1])
        # conditions as columns of the option-probability vector; padding points at a
        # constant-1 column appended after the last option
        table = np.full((h.num_dims, depth), self.num_options, dtype=np.int64)
        for d, conds in enumerate(h.conditions):
            for k, (c, o) in enumerate(conds):
                table[d, k] = self.offsets[cat_pos[c]] + o
        self.condition_columns = table
        # each option column belongs to which categorical
        self.option_owner = np.repeat(self.categorical, sizes)

    def split(self, outputs):
        """(continuous values, list of option-logit blocks) from encoder outputs."""
        z = outputs[:, : self.num_continuous]
        logits = [
            outputs[:, self.num_continuous + o : self.num_continuous + o + int(n)]
            for o, n in zip(self.offsets, self.hierarchy.num_options[self.categorical])
        ]
        return z, logits

    def masks(self, option_probs):
        """(n, num_dims) product of option probabilities along each dimension's path."""
        # (n, 1) even when the hierarchy has no categorical (option_probs is (n, 0))
        ones = ops.ones_like(ops.sum(option_probs, axis=1, keepdims=True))
        padded = ops.concatenate([option_probs, ones], axis=1)
        return ops.prod(ops.take(padded, self.condition_columns, axis=1), axis=-1)

    def decoder_input(self, z, option_probs):
        """concat(masked option probabilities, masked continuous values) and the masks."""
        masks = self.masks(option_probs)
        option_masks = ops.take(masks, self.option_owner, axis=1) if self.num_options else option_probs
        cont_masks = ops.take(masks, self.continuous, axis=1)
        return ops.concatenate([option_probs * option_masks, z * cont_masks], axis=1), masks

    def soft_probs(self, logits, tau: float):
        if not logits:
            return None
        return ops.concatenate([ops.softmax(block / tau, axis=-1) for block in logits], axis=1)

    def hard_probs(self, logits):
        if not logits:
            return None
        return ops.concatenate([ops.one_hot(ops.argmax(b, axis=-1), b.shape[-1]) for b in logits], axis=1)

    def flat_codes(self, z, option_probs, masks):
        """Codes in the hierarchy's flat layout from hard probabilities."""
        h = self.hierarchy
        columns = [None] * h.num_dims
        for i, d in enumerate(self.continuous):
            columns[d] = z[:, i] * masks[:, d]
        for i, d in enumerate(self.categorical):
            block = option_probs[:, self.offsets[i] : self.offsets[i] + h.num_options[d]]
            columns[d] = ops.cast(ops.argmax(block, axis=-1) + 1, z.dtype) * masks[:, d]
        return ops.stack(columns, axis=1)

    def from_flat(self, codes):
        """(decoder input) for codes in the flat layout (categoricals as option index + 1,
        0 where inactive)."""
        h = self.hierarchy
        blocks = [
            ops.one_hot(ops.cast(codes[:, d], "int32") - 1, int(h.num_options[d])) for d in self.categorical
        ]
        probs = ops.concatenate(blocks, axis=1) if blocks else codes[:, :0]
        z = ops.take(codes, self.continuous, axis=1)
        return self.decoder_input(z, probs)[0]


def conditional_permute(z, active, seed):
    """Permute each column of ``z`` across rows, only among the rows where it is active.

    Inactive entries stay where they are; every column's multiset of active values is
    kept. Vectorised: per column, the active rows in index order receive the values of
    the active rows in a random order.
    """
    z = tf.convert_to_tensor(z)
    active = tf.cast(active, tf.bool)
    n = tf.shape(z)[0]
    index = tf.cast(tf.range(n), z.dtype)[:, None] * tf.ones_like(z)
    keys = tf.random.stateless_uniform(tf.shape(z), seed=seed, dtype=z.dtype)
    big = tf.cast(n, z.dtype) + 2.0
    in_order = tf.argsort(tf.where(active, index, big + index), axis=0, stable=True)
    shuffled = tf.argsort(tf.where(active, keys - 2.0, big + index), axis=0, stable=True)
    # row in_order[k, d] takes the value of row shuffled[k, d]
    zt, src = tf.transpose(z), tf.transpose(shuffled)
    values = tf.gather(zt, src, batch_dims=1)
    dst = tf.transpose(in_order)
    cols = tf.repeat(tf.range(tf.shape(zt)[0])[:, None], n, axis=1)
    out = tf.scatter_nd(tf.stack([cols, dst], axis=-1), values, tf.shape(zt))
    return tf.transpose(out)


def _permute_active(z, active, seed):
    """:func:`conditional_permute` with ``active`` given as the hard masks (> 0.5 = active)."""
    return conditional_permute(z, active > 0.5, seed)


def targets_from_assignments(hierarchy: Hierarchy, assignments) -> np.ndarray:
    """(n, num_dims) training targets from path assignments (-1 = discarded).

    Categorical entries hold the option on the assigned path, -1 where the
    categorical is not on it or the point is discarded; continuous entries are NaN
    (no supervision).
    """
    a = np.asarray(assignments, dtype=np.int64)
    if a.ndim != 1 or np.any(a >= hierarchy.num_paths) or np.any(a < -1):
        raise ValueError(f"assignments must be path indices in [-1, {hierarchy.num_paths}), got {np.unique(a)[:10]}")
    out = np.full((len(a), hierarchy.num_dims), np.nan)
    choices = hierarchy.path_choices[np.maximum(a, 0)].astype(float)
    choices[a < 0] = -1
    out[:, hierarchy.is_categorical] = choices[:, hierarchy.is_categorical]
    return out


def targets_from_factors(hierarchy: Hierarchy, factors, active=None, standardize: bool = True) -> np.ndarray:
    """(n, num_dims) targets from ground-truth factors in the same flat layout.

    Inactive categoricals become -1 and inactive continuous values NaN; used by the
    supervised ablations (H+A, H+A+Z). With ``standardize`` each continuous target is
    centred and scaled to unit standard deviation over the rows where it is active, so
    that H+A+Z's squared error on the codes weighs every factor alike whatever its units
    (Chopsticks' slopes span 0.01, its intercepts 0.2: in the factors' units the slopes'
    error is 400x smaller and barely supervised); ``False`` keeps the factors' units.
    """
    f = np.asarray(factors, dtype=float)
    active = hierarchy.activity_mask(f) if active is None else np.asarray(active, bool)
    out = np.where(active, f, np.nan)
    if standardize:
        cont = ~hierarchy.is_categorical & active.any(axis=0)
        values = out[:, cont]
        scale = np.nanstd(values, axis=0)
        if np.any(scale == 0):
            names = np.asarray(hierarchy.names)[cont][scale == 0].tolist()
            raise ValueError(f"continuous factors {names} are constant where active: nothing to standardise; "
                             "pass standardize=False")
        out[:, cont] = (values - np.nanmean(values, axis=0)) / scale
    cats = hierarchy.is_categorical
    # factors hold option index + 1 where a categorical is active; targets the index
    out[:, cats] = np.where(active[:, cats], f[:, cats] - 1, -1)
    return out


@keras.saving.register_keras_serializable(package="hier_models")
class COFHAE(Adversarial, Autoencoder):
    """Hierarchical autoencoder with assignment supervision and a conditional TC penalty.

    Ross & Doshi-Velez (2021), section 5.2, Algorithm 2 (the module docstring gives
    the encoding and the loss). ``fit`` takes ``(observation, targets)`` batches, where
    ``targets`` (n, num_dims) come from :func:`targets_from_assignments` (MIMOSA) or
    :func:`targets_from_factors` (ground truth); ablations without supervision also
    take observations alone. ``compile(optimizer=..., discriminator_optimizer=...)``;
    the discriminator's optimiser defaults to
    :func:`~hier_models.adversarial.matching_adam` of the main one (Adam with default
    betas, same learning rate and schedule). The paper selects ``tau``,
    ``lambda_assign`` and ``lambda_tc`` over a 27-run grid
    (:func:`hier_models.hierarchical.grid_search`). Metrics: ``loss``,
    ``reconstruction``, ``assignment``, ``supervision``, ``tc``,
    ``discriminator_loss``, ``discriminator_accuracy``.

    Args:
      input_shape: shape of one observation, e.g. ``(64,)`` or ``(64, 64, 1)``.
      hierarchy: the dimension hierarchy (section 3), a :class:`~hier_datasets.Hierarchy`
        or its JSON; it needs at least one continuous dimension.
      tau: softmax temperature of the categorical assignments, default 1.0 (section 5.2;
        the grid of appendix A.1 is 0.5, 0.67, 1).
      lambda_assign: weight of the assignment loss L_a, default 100.0 (the centre of
        the grid 10, 100, 1000, appendix A.1; the authors' single-run default).
      lambda_tc: weight of the conditional total correlation, default 10.0 (the centre
        of the grid 1, 10, 100, appendix A.1).
      decoder_assignments: what the decoder and the TC discriminator see in training:
        ``"soft"`` (default, the paper's section 5.2 and the authors' code): the
        tempered softmax and the codes masked by it; or ``"straight_through"``: the
        hard (argmax) assignments and masks that ``encode`` uses, with the softmax's
        gradient (straight-through estimator). With soft assignments every group's
        codes reach the decoder, scaled by the probabilities of the options not taken,
        and can carry information that hard assignments at evaluation drop; the
        assignment loss L_a is computed from the soft probabilities in both modes.
        Straight-through scored higher on Spaceshapes' images and the same on
        Chopsticks' series (``docs/results/ross2021.md``).
      assignment_probabilities: what L_a compares with the one-hot targets:
        ``"masked"`` (default): the masked probabilities ``a'`` of appendix
        Algorithm 8 (each categorical's softmax times the option probabilities above
        it), or ``"softmax"``: each categorical's own tempered softmax, so that a
        nested target does not push its parents (``docs/results/cofhae_ablation.md``).
      ablation: which loss terms train, one of :data:`ABLATIONS`: ``"H+A+TC(Z|on)"``
        (default, COFHAE), ``"H"``, ``"H+A"``, ``"H+A+TC(Z)"`` (marginal TC),
        ``"H+TC(Z|on)"`` or ``"H+A+Z"`` (supervised codes); the paper's figures 4 and 10.
      discriminator_units: hidden widths of the leaky-ReLU TC discriminator, default
        three layers of 1,000 (the authors' implementation).
      tc_rows: how many rows of each batch the TC penalty and the discriminator's step
        use: the first ``tc_rows`` (batches are shuffled, so a random subset; the
        conditional permutation runs among them), or None (default): every row, as
        in the paper. The discriminator does ~97% of a step's arithmetic at the
        paper's width, so 64 of 256 rows cut its share by 4x
        (``docs/results/cofhae_ablation.md`` measures what that costs in R4c).
      discriminator_dtype: dtype policy of the discriminator's hidden layers: None
        (default: the global policy), ``"float32"``, ``"mixed_bfloat16"`` or
        ``"mixed_float16"`` (:func:`~hier_models.adversarial.build_discriminator`).
      architecture: encoder and decoder networks (:mod:`hier_models.architectures`);
        default (None): ``"mlp"`` for series (two hidden layers of 256) and
        ``"burgess"`` for 64x64 images, as in appendix A.1.
      activation: Keras activation of the hidden layers; default (None): the
        architecture's (ReLU, appendix A.1).
      hidden_units: widths of the ``"mlp"`` hidden layers, default ``(256, 256)``.
      likelihood: ``"gaussian"`` (default for series) or ``"bernoulli"`` (default for
        images), appendix A.1; see :class:`~hier_models.base.Autoencoder`.
      observation_std: the Gaussian likelihood's standard deviation, default
        ``200 ** -0.5`` (see :class:`~hier_models.base.Autoencoder`).
      random_state: integer seed (or numpy ``Generator``) of the TC permutations and
        the sampling noise; default (None): drawn and stored in the config (see
        :class:`~hier_models.base.Autoencoder`).
      **kwargs: ``name`` and ``trainable``, as for any ``keras.Model``.

    Raises:
      ValueError: a ``hierarchy`` with no continuous dimension, a non-positive
        ``tau``, a negative weight, an unknown ``ablation`` or
        ``discriminator_dtype``, or an invalid network argument.
      TypeError: a ``hierarchy`` that is neither a Hierarchy nor its JSON.

    Example:
      >>> import keras, numpy as np
      >>> from hier_datasets.hierarchy import Categorical, Group, Hierarchy
      >>> from hier_models import COFHAE
      >>> from hier_models.cofhae import targets_from_assignments
      >>> hierarchy = Hierarchy(Group(("x",), Categorical("kind", (("a", Group(("u",))), ("b", Group(("v",)))))))
      >>> keras.utils.set_random_seed(0)
      >>> rng = np.random.default_rng(0)
      >>> x = rng.normal(size=(16, 8)).astype("float32")
      >>> targets = targets_from_assignments(hierarchy, rng.integers(hierarchy.num_paths, size=16))
      >>> model = COFHAE((8,), hierarchy, hidden_units=(8,), discriminator_units=(8,), random_state=0)
      >>> model.compile(optimizer="adam")
      >>> history = model.fit(x, targets, batch_size=16, epochs=1, verbose=0)  # one step
      >>> model.encode(x).shape  # x, kind, u, v: inactive dimensions are 0
      (16, 4)
    """

    loss_terms = ("loss", "reconstruction", "assignment", "supervision", "tc", "discriminator_loss", "discriminator_accuracy")

    def __init__(
        self,
        input_shape,
        hierarchy,
        *,
        tau: float = 1.0,
        lambda_assign: float = 100.0,
        lambda_tc: float = 10.0,
        ablation: str = "H+A+TC(Z|on)",
        decoder_assignments: str = "soft",
        assignment_probabilities: str = "masked",
        discriminator_units=(1000,) * 3,
        tc_rows: int | None = None,
        discriminator_dtype: str | None = None,
        architecture: str | None = None,
        activation: str | None = None,
        hidden_units=None,
        likelihood: str | None = None,
        observation_std: float = DEFAULT_OBSERVATION_STD,
        random_state: int | np.random.Generator | None = None,
        **kwargs,
    ):
        super().__init__(
            input_shape, likelihood=likelihood, observation_std=observation_std, random_state=random_state, **kwargs
        )
        if isinstance(hierarchy, str):
            hierarchy = Hierarchy.from_json(hierarchy)
        if not isinstance(hierarchy, Hierarchy):
            raise TypeError(f"hierarchy must be a hier_datasets.Hierarchy (or its JSON), got {type(hierarchy).__name__}")
        if not (~hierarchy.is_categorical).any():
            raise ValueError("hierarchy must have at least one continuous dimension")
        self.hierarchy = hierarchy
        self.tau = check_positive(tau, "tau")
        self.lambda_assign = check_non_negative(lambda_assign, "lambda_assign")
        self.lambda_tc = check_non_negative(lambda_tc, "lambda_tc")
        self.ablation = check_choice(ablation, "ablation", tuple(ABLATIONS))
        self.decoder_assignments = check_choice(decoder_assignments, "decoder_assignments",
                                                ("soft", "straight_through"))
        self.assignment_probabilities = check_choice(assignment_probabilities, "assignment_probabilities",
                                                     ("masked", "softmax"))
        self.supervise_assignments, self.tc_mode, self.supervise_codes = ABLATIONS[ablation]
        units = check_units(discriminator_units, "discriminator_units")
        self.tc_rows = None if tc_rows is None else check_positive_int(tc_rows, "tc_rows")
        self.encoding = enc = HierarchicalEncoding(hierarchy)
        self.latent_dim = hierarchy.num_dims
        options = dict(architecture=architecture, activation=activation, hidden_units=hidden_units)
        self.encoder = build_encoder(self.observation_shape, enc.encoder_width, name="encoder", **options)
        self.decoder = build_decoder(self.observation_shape, enc.num_options + enc.num_continuous, name="decoder", **options)
        self.discriminator = build_discriminator(enc.num_continuous, units, dtype=discriminator_dtype)
        self._config.update(
            dict(
                hierarchy=hierarchy.to_json(),
                tau=self.tau,
                lambda_assign=self.lambda_assign,
                lambda_tc=self.lambda_tc,
                ablation=self.ablation,
                decoder_assignments=self.decoder_assignments,
                assignment_probabilities=self.assignment_probabilities,
                discriminator_units=list(units),
                tc_rows=self.tc_rows,
                discriminator_dtype=discriminator_dtype,
                architecture=architecture,
                activation=activation,
                hidden_units=None if hidden_units is None else list(hidden_units),
            )
        )
        self._finish_init()

    # ---------------------------------------------------------------- batches
    def _split(self, data):
        if isinstance(data, (tuple, list)) and len(data) >= 2:
            x = self._observations(data[0])
            targets = tf.cast(tf.convert_to_tensor(data[1]), "float32")
            if targets.shape.rank != 2 or targets.shape[-1] != self.hierarchy.num_dims:
                raise ValueError(
                    f"COFHAE targets must have shape (n, {self.hierarchy.num_dims}) in the hierarchy's flat layout "
                    f"(see targets_from_assignments), got {targets.shape}"
                )
            return x, targets
        if self.supervise_assignments or self.supervise_codes:
            raise ValueError(
                f"COFHAE ablation {self.ablation!r} needs (observation, targets) batches; "
                "make targets with targets_from_assignments(hierarchy, assignments)"
            )
        return self._observations(data), None

    def _forward_batch(self, data, training):
        x, targets = self._split(data)
        return self._forward(x, training, targets)

    def _forward(self, x, training, targets=None):
        enc = self.encoding
        z, logits = enc.split(self.encoder(x, training=training))
        probs = enc.soft_probs(logits, self.tau)
        probs = z[:, :0] if probs is None else probs
        hard = enc.hard_probs(logits)
        soft_inputs, masks = enc.decoder_input(z, probs)
        inputs = soft_inputs
        if self.decoder_assignments == "straight_through" and logits:
            inputs, _ = enc.decoder_input(z, hard + probs - ops.stop_gradient(probs))
        recon = self._reconstruction(x, self.decoder(inputs, training=training))
        zero = ops.zeros((), "float32")
        assignment = supervision = tc = zero
        if targets is not None and self.supervise_assignments and enc.num_options:
            cat_targets = ops.take(targets, enc.option_owner, axis=1)
            local = np.concatenate([np.arange(n) for n in self.hierarchy.num_options[enc.categorical]])
            onehot = ops.cast(ops.equal(cat_targets, ops.convert_to_tensor(local, "float32")), "float32")
            defined = ops.cast(cat_targets >= 0, "float32")
            compared = soft_inputs[:, : enc.num_options] if self.assignment_probabilities == "masked" else probs
            assignment = ops.mean(ops.sum(defined * (compared - onehot) ** 2, axis=1))
        if targets is not None and self.supervise_codes:
            goal = ops.take(targets, enc.continuous, axis=1)
            known = ops.logical_not(ops.isnan(goal))
            residual = ops.where(known, z - ops.where(known, goal, 0.0), 0.0)
            supervision = ops.mean(ops.sum(residual**2, axis=1))
        masked = inputs[:, enc.num_options :]
        hard_masks = enc.masks(hard) if logits else ops.ones_like(masks)
        active = ops.take(hard_masks, enc.continuous, axis=1)
        if self.tc_rows is not None:
            masked, active = masked[: self.tc_rows], active[: self.tc_rows]
        if self.tc_mode != "none":
            tc = ops.mean(self.discriminator(masked))
        loss = recon + self.lambda_assign * (assignment + supervision) + self.lambda_tc * tc
        terms = {"loss": loss, "reconstruction": recon, "assignment": assignment, "supervision": supervision, "tc": tc}
        return terms, (masked, active)

    def _default_discriminator_optimizer(self):
        """Adam with default betas at the main optimiser's learning rate and schedule."""
        return matching_adam(self.optimizer)

    def _auxiliary_step(self, aux, training):
        if self.tc_mode == "none":
            zero = ops.zeros((), "float32")
            return {"discriminator_loss": zero, "discriminator_accuracy": zero}
        masked, active = aux
        # the permutation runs over the global batch when replicas split it
        if self.tc_mode == "conditional":
            real, fake, share = self._permuted_codes(masked, _permute_active, active)
        else:
            real, fake, share = self._permuted_codes(masked, losses.permute_dims)
        return self._discriminator_step(real, fake, training, share)

    # -------------------------------------------------------------- inference
    def _codes(self, x):
        enc = self.encoding
        z, logits = enc.split(self.encoder(x, training=False))
        hard = enc.hard_probs(logits)
        hard = z[:, :0] if hard is None else hard
        return enc.flat_codes(z, hard, enc.masks(hard))

    def _decode_tensor(self, codes):
        return self.decoder(self.encoding.from_flat(codes), training=False)

    def assignments(self, x, batch_size: int = 256) -> np.ndarray:
        """Path index of each observation under the hard assignments."""
        return self.hierarchy.path_index(self.encode(x, batch_size))
