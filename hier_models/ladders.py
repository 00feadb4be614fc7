"""Progressive ladder models: pro-VLAE (Li et al. 2020) and pro-LVAE (Boxhead paper, section 4).

Both have L latent layers (layer 1 lowest, layer L top; default 3 x 4 latents) on
the ladder networks of :func:`hier_models.networks.build_ladder`:

- inference: a bottom-up pass h_1 .. h_L; layer l's posterior is read from the
  features of stage l, for l < L through its ladder encoder, whose input is scaled by
  the layer's fade-in weight, ``e_l(alpha_l * h_l)`` (``encoder_fade_in=True``);
- generation: z_L starts the top-down stream g_L; before g_l (l < L) the stream is
  concatenated with ``alpha_l * u_l(z_l)``, the layer's decoded code scaled by its
  fade-in weight; g_0 outputs the observation's logits or means.

Progressive training (Li et al. 2020, section 3; Boxhead paper, section 5 and
appendix B): the top layer trains alone first, its KL weight annealed
``beta_L(t) = beta_0 + (beta - beta_0) * min(1, t / beta_anneal_steps)`` from
``beta_0 = beta_start`` (None, the default: from 0; the Boxhead authors' code anneals
it down from 150, :mod:`hier_models.protocols`); layer ``L - s`` fades in with
``alpha`` rising 0 -> 1 from step ``s * stage_steps`` over ``fade_in_steps`` steps.
The lengths are whole steps (ints; the Boxhead paper's are 5,000 each: layer L-1
over steps 5,000-10,000, layer L-2 over 10,000-15,000) or fractions of the training
length that ``fit`` sets (floats; the defaults, 0.2 each, give layer L-1 the second
fifth of the run and layer L-2 the third, so every layer trains at full weight for
the last 40%); see :mod:`hier_models.schedules`. The loss is

``reconstruction + beta_L(t) KL_L + sum_(l<L) w_l KL_l``, ``w_l = beta`` once
``alpha_l > 0`` and ``w_l = gamma`` (default 0.5) before: a layer not yet faded in
(whose ladder encoder sees zeros) is held at its prior, as in the progressive
scheme of Li et al. (2020) and the Boxhead authors' code.

pro-VLAE's priors are N(0, I) for every layer. pro-LVAE conditions the prior of each
lower layer on all layers above, ``p(z_l | z_>l) = N(mu_l(z_>l), var_l(z_>l))``, and
its posterior ``q(z_l | x, z_>l)`` is the precision-weighted product of the bottom-up
estimate and that prior (as in ladder VAEs); its KL term is
``KL(q(z_l | x, z_>l) || p(z_l | z_>l))`` at a sample of ``z_>l``.

The Boxhead networks are large (159M / 211M parameters as ladders); train them
with a smaller learning rate than Adam's default, e.g. ``Adam(1e-4)``: at 1e-3 the
first steps throw the top layer's posterior far out while its KL weight is still 0.

``encode`` returns the posterior means of all layers concatenated from layer 1 to
layer L (for pro-LVAE, computed top-down from the means of the layers above);
``encode_layers`` returns them as a list.
"""
from __future__ import annotations

import keras
import numpy as np
from keras import ops

from hier_datasets.validation import check_non_negative, check_positive_int
from hier_models import losses
from hier_models.architectures import default_architecture
from hier_models.base import Autoencoder
from hier_models.networks import build_ladder
from hier_models.schedules import (
    _NEVER,
    FollowsTrainingLength,
    _never_ramps,
    annealed_weight,
    check_length,
    check_weight_start,
    ladder_fade_in,
    resolve_length,
)

__all__ = ["ProLVAE", "ProVLAE", "resolve_latents_per_layer"]


def resolve_latents_per_layer(latent_dim=None, latents_per_layer=None, num_layers=None) -> tuple[int, ...]:
    """Layer sizes (layer 1 first) from the constructor's arguments.

    ``latents_per_layer`` is an int (the same size for each of ``num_layers`` layers)
    or a sequence of sizes. Without it, ``latent_dim`` is split evenly over
    ``num_layers``; without either, 4 per layer. ``num_layers`` defaults to the
    sequence's length, else 3. Arguments given together must agree.
    """
    sized = latents_per_layer is not None and not isinstance(latents_per_layer, (int, np.integer))
    if sized:
        sizes = tuple(check_positive_int(k, f"latents_per_layer[{i}]") for i, k in enumerate(latents_per_layer))
        if not sizes:
            raise ValueError("latents_per_layer must not be empty")
        if num_layers is not None and check_positive_int(num_layers, "num_layers") != len(sizes):
            raise ValueError(f"num_layers={num_layers} does not match latents_per_layer={list(sizes)}")
    else:
        num_layers = 3 if num_layers is None else check_positive_int(num_layers, "num_layers")
        if latents_per_layer is not None:
            sizes = (check_positive_int(latents_per_layer, "latents_per_layer"),) * num_layers
        elif latent_dim is None:
            sizes = (4,) * num_layers
        else:
            latent_dim = check_positive_int(latent_dim, "latent_dim")
            if latent_dim % num_layers:
                raise ValueError(
                    f"latent_dim={latent_dim} cannot be split evenly over num_layers={num_layers}; "
                    "pass latents_per_layer instead"
                )
            sizes = (latent_dim // num_layers,) * num_layers
    if latent_dim is not None and check_positive_int(latent_dim, "latent_dim") != sum(sizes):
        raise ValueError(f"latent_dim={latent_dim} does not match latents_per_layer={list(sizes)} (sum {sum(sizes)})")
    return sizes


class _ProgressiveLadder(FollowsTrainingLength, Autoencoder):
    """Shared implementation; ``conditional_prior`` tells pro-LVAE from pro-VLAE."""

    conditional_prior = False

    def __init__(
        self,
        input_shape,
        latent_dim: int | None = None,
        *,
        latents_per_layer=None,
        num_layers: int | None = None,
        beta: float = 1.0,
        beta_anneal_steps: int | float = 0.2,
        beta_start: float | None = None,
        fade_in_steps: int | float = 0.2,
        stage_steps: int | float | None = None,
        gamma: float = 0.5,
        encoder_fade_in: bool = True,
        training_steps: int | None = None,
        architecture: str | None = None,
        activation: str | None = None,
        hidden_units=None,
        **kwargs,
    ):
        super().__init__(input_shape, **kwargs)
        sizes = resolve_latents_per_layer(latent_dim, latents_per_layer, num_layers)
        self.latents_per_layer = sizes
        self.num_layers = len(sizes)
        self.latent_dim = sum(sizes)
        self.beta = check_non_negative(beta, "beta")
        self.beta_anneal_steps = check_length("beta_anneal_steps", beta_anneal_steps)
        self.beta_start = check_weight_start("beta_start", beta_start, self.beta_anneal_steps)
        self.fade_in_steps = check_length("fade_in_steps", fade_in_steps)
        self.stage_steps = None if stage_steps is None else check_length("stage_steps", stage_steps)
        self.gamma = check_non_negative(gamma, "gamma")
        if not isinstance(encoder_fade_in, (bool, np.bool_)):
            raise ValueError(f"encoder_fade_in must be True or False, got {encoder_fade_in!r}")
        self.encoder_fade_in = bool(encoder_fade_in)
        nets = build_ladder(
            self.observation_shape,
            sizes,
            architecture=architecture,
            activation=activation,
            hidden_units=hidden_units,
            conditional_prior=self.conditional_prior,
        )
        self.architecture = architecture or default_architecture(self.observation_shape, ladder=True)
        self.bottom_up = nets.bottom_up
        self.ladder_encoders = nets.ladder_encoders
        self.posterior_heads = nets.posterior_heads
        self.ladder_decoders = nets.ladder_decoders
        self.top_down = nets.top_down
        self.output_network = nets.output
        self.priors = nets.priors
        self._config.update(
            dict(
                latent_dim=self.latent_dim,
                latents_per_layer=list(sizes),
                num_layers=self.num_layers,
                beta=self.beta,
                beta_anneal_steps=self.beta_anneal_steps,
                beta_start=self.beta_start,
                fade_in_steps=self.fade_in_steps,
                stage_steps=self.stage_steps,
                gamma=self.gamma,
                encoder_fade_in=self.encoder_fade_in,
                architecture=self.architecture,
                activation=activation,
                hidden_units=None if hidden_units is None else list(hidden_units),
            )
        )
        self._init_training_length(training_steps)
        self._build_schedules()
        self.loss_terms = ("loss", "reconstruction", "kl") + tuple(f"kl_{layer}" for layer in range(1, self.num_layers + 1))
        self._finish_init(("beta",) + tuple(f"alpha_{layer}" for layer in range(1, self.num_layers)))

    # ------------------------------------------------------------ schedules
    def _schedule_lengths(self) -> dict:
        lengths = {"beta_anneal_steps": self.beta_anneal_steps, "fade_in_steps": self.fade_in_steps}
        if self.stage_steps is not None:
            lengths["stage_steps"] = self.stage_steps
        return lengths

    def _build_schedules(self) -> None:
        total = self.training_steps
        anneal = resolve_length(self.beta_anneal_steps, total)
        fade = resolve_length(self.fade_in_steps, total)
        stage = None if self.stage_steps is None else resolve_length(self.stage_steps, total)
        self._beta_schedule = annealed_weight(self.beta, anneal, start=self.beta_start or 0.0)
        if fade is None or (self.stage_steps is not None and stage is None):
            self._fade_in = _never_ramps(self.num_layers - 1)  # alpha 0 until fit sets the length
        else:
            self._fade_in = ladder_fade_in(self.num_layers, fade, stage)

    def _schedule_ends(self) -> dict:
        known = not any(r.start >= _NEVER for r in self._fade_in)
        ends = {"the top layer's beta annealing": self._beta_schedule.end if self._beta_schedule.start < _NEVER else None}
        ends.update({f"the fade-in of layer {layer}": r.end if known else None for layer, r in enumerate(self._fade_in, start=1)})
        return ends

    def _alphas(self, step):
        return [ramp(step) for ramp in self._fade_in]

    def schedule(self, step=None) -> dict:
        """``beta`` (the top layer's KL weight) and ``alpha_l`` (fade-in of layer l < L) at ``step``."""
        step = self.step if step is None else step
        values = {"beta": float(self._beta_schedule(step))}
        values.update({f"alpha_{layer}": float(a) for layer, a in enumerate(self._alphas(step), start=1)})
        return values

    # -------------------------------------------------------------- network
    def _bottom_up(self, x, alphas, training):
        """Per layer (layer 1 first): ``(mean, logvar)`` of the bottom-up estimate; a
        lower layer's ladder encoder reads its stage's features times its fade-in
        weight (with ``encoder_fade_in``)."""
        features, h = [], x
        for net in self.bottom_up:
            h = net(h, training=training)
            features.append(h)
        if self.encoder_fade_in:
            features = [ops.cast(a, f.dtype) * f for a, f in zip(alphas, features)] + features[len(alphas):]
        flats = [enc(f, training=training) for enc, f in zip(self.ladder_encoders, features)] + [features[-1]]
        estimates = []
        for head, flat, k in zip(self.posterior_heads, flats, self.latents_per_layer):
            out = head(flat, training=training)
            estimates.append((out[:, :k], losses.bound_logvar(out[:, k:])))
        return estimates

    def _posterior(self, estimates, layer, codes_above, training):
        """``(mean, logvar, prior)`` of layer ``layer`` (0-based) given the codes above."""
        mean, logvar = estimates[layer]
        if not self.conditional_prior or layer == self.num_layers - 1:
            return mean, logvar, None
        k = self.latents_per_layer[layer]
        out = self.priors[layer](ops.concatenate(codes_above, axis=-1), training=training)
        prior = (out[:, :k], losses.bound_logvar(out[:, k:]))
        mean, logvar = losses.merge_gaussians(mean, logvar, *prior)
        return mean, logvar, prior

    def _decode_layers(self, codes, alphas, training):
        """Decoder outputs from per-layer codes (layer 1 first) and fade-in weights."""
        stream = self.top_down[-1](codes[-1], training=training)
        for layer in range(self.num_layers - 2, -1, -1):
            ladder = self.ladder_decoders[layer](codes[layer], training=training)
            merged = ops.concatenate([stream, ops.cast(alphas[layer], ladder.dtype) * ladder], axis=-1)
            stream = self.top_down[layer](merged, training=training)
        return self.output_network(stream, training=training)

    def _forward(self, x, training):
        alphas = self._alphas(self._step)
        estimates = self._bottom_up(x, alphas, training)
        codes, kls = [None] * self.num_layers, [None] * self.num_layers
        for layer in range(self.num_layers - 1, -1, -1):
            mean, logvar, prior = self._posterior(estimates, layer, codes[layer + 1 :], training)
            codes[layer] = self._sample(mean, logvar, salt=layer)
            if prior is None:
                kls[layer] = ops.mean(losses.gaussian_kl(mean, logvar))
            else:
                kls[layer] = ops.mean(losses.gaussian_kl_between(mean, logvar, *prior))
        recon = self._reconstruction(x, self._decode_layers(codes, alphas, training))
        beta_top = self._beta_schedule(self._step)
        penalty = beta_top * kls[-1]
        for layer, alpha in enumerate(alphas):
            faded_in = ops.cast(alpha > 0, "float32")
            penalty = penalty + (self.gamma + (self.beta - self.gamma) * faded_in) * kls[layer]
        terms = {"loss": recon + penalty, "reconstruction": recon, "kl": sum(kls), "beta": beta_top}
        terms.update({f"kl_{layer}": kl for layer, kl in enumerate(kls, start=1)})
        terms.update({f"alpha_{layer}": a for layer, a in enumerate(alphas, start=1)})
        return terms, codes

    def _layer_means(self, x):
        estimates = self._bottom_up(x, self._alphas(self._step), training=False)
        means = [None] * self.num_layers
        for layer in range(self.num_layers - 1, -1, -1):
            means[layer] = self._posterior(estimates, layer, means[layer + 1 :], training=False)[0]
        return means

    def _codes(self, x):
        return ops.concatenate(self._layer_means(x), axis=-1)

    def _split(self, z):
        bounds = np.cumsum((0,) + self.latents_per_layer)
        return [z[:, lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]

    def _decode_tensor(self, z):
        """Decode concatenated codes with the current fade-in weights."""
        return self._decode_layers(self._split(z), self._alphas(self._step), training=False)

    def encode_layers(self, x, batch_size: int = 256) -> list[np.ndarray]:
        """Posterior means per layer, layer 1 (lowest) first."""
        codes = self.encode(x, batch_size=batch_size)
        return self._split(codes)


@keras.saving.register_keras_serializable(package="hier_models")
class ProVLAE(_ProgressiveLadder):
    """Progressive variational ladder autoencoder (pro-VLAE, Li et al. 2020).

    Every layer's prior is N(0, I); the module docstring describes the networks, the
    schedules and the loss. Metrics: ``loss``, ``reconstruction``, ``kl`` (all
    layers), ``kl_1`` .. ``kl_L``, ``beta`` (the top layer's current weight),
    ``alpha_1`` .. ``alpha_(L-1)`` (fade-in weights).

    Args:
      input_shape: shape of one observation, e.g. ``(64,)`` or ``(64, 64, 3)``.
      latent_dim: total number of latents, split evenly over the layers; default
        (None): from ``latents_per_layer``, else 4 per layer.
      latents_per_layer: latents of each layer, layer 1 (lowest) first: an int (the
        same for every layer) or a sequence; default 4 per layer (the Boxhead paper's
        3 x 4, section 5).
      num_layers: number of latent layers L, default the length of
        ``latents_per_layer``, else 3 (Boxhead paper, section 5).
      beta: the KL weight of every faded-in layer, default 1.0; the Boxhead paper
        sweeps 1, 5, 10, 20 (section 5).
      beta_anneal_steps: length of the top layer's annealing from ``beta_start`` to
        ``beta``, default 0.2 (a fifth of training); whole steps (an int; 5,000 in the
        Boxhead paper, section 5) or a fraction of the training length (a float in
        [0, 1], :mod:`hier_models.schedules`).
      beta_start: the top layer's KL weight at step 0; None (the default) starts from
        0, the Boxhead authors' code from 150 (:mod:`hier_models.protocols`).
      fade_in_steps: length of each lower layer's fade-in, alpha rising 0 -> 1
        (Li et al. 2020, section 3); default 0.2, or steps (5,000 in the Boxhead paper,
        section 5).
      stage_steps: steps between the starts of successive fade-ins (layer ``L - s``
        starts at ``s * stage_steps``); default (None): ``fade_in_steps``, so the
        fade-ins run back to back.
      gamma: KL weight of a layer not yet faded in, default 0.5 (the pre-trained KL
        penalty of Li et al. 2020's progressive scheme); 0 turns it off, as the
        Boxhead paper's objective does (appendix A).
      encoder_fade_in: scale a lower layer's ladder-encoder input by its fade-in
        weight (default True, Li et al. 2020, section 3); False feeds it unscaled
        features (the decoder side always fades in).
      training_steps: the training length that fraction schedules refer to; default
        (None): set by each ``fit``.
      architecture: ``"mlp"`` (default for series), ``"boxhead_small"`` (default for
        64x64 images), ``"boxhead_large"`` (Boxhead paper, appendix B.2) or the much
        lighter ``"burgess"`` ladder (:mod:`hier_models.architectures`).
      activation: Keras activation of the hidden layers; default (None): the
        architecture's.
      hidden_units: widths of the ``"mlp"`` ladder stages, default 256.
      **kwargs: ``likelihood``, ``observation_std``, ``random_state``, ``name``,
        ``trainable`` (see :class:`~hier_models.base.Autoencoder`).

    Raises:
      ValueError: layer sizes that disagree (``latent_dim``, ``latents_per_layer``,
        ``num_layers``), a negative weight, a schedule length that is neither an int
        >= 0 nor a float in [0, 1], a non-boolean ``encoder_fade_in``, or an
        architecture that does not fit the input or the number of layers.

    Example:
      >>> import keras, numpy as np
      >>> from hier_models import ProVLAE
      >>> keras.utils.set_random_seed(0)
      >>> x = np.random.default_rng(0).normal(size=(16, 16)).astype("float32")
      >>> model = ProVLAE((16,), latents_per_layer=(1, 1, 2), fade_in_steps=4, beta_anneal_steps=4,
      ...                 hidden_units=(8,), random_state=0)
      >>> model.schedule(6)  # layer 2 fades in over steps 4-8, layer 1 over 8-12
      {'beta': 1.0, 'alpha_1': 0.0, 'alpha_2': 0.5}
      >>> [codes.shape for codes in model.encode_layers(x)]
      [(16, 1), (16, 1), (16, 2)]
    """


@keras.saving.register_keras_serializable(package="hier_models")
class ProLVAE(_ProgressiveLadder):
    """Progressive ladder VAE (pro-LVAE, Boxhead paper section 4).

    Arguments, errors and metrics as :class:`ProVLAE`. The prior of each lower layer is
    conditioned on all layers above (an MLP with 256 hidden units on their codes)
    and the posterior merges it with the bottom-up estimate by precision weighting.

    Example:
      >>> import keras, numpy as np
      >>> from hier_models import ProLVAE
      >>> keras.utils.set_random_seed(0)
      >>> model = ProLVAE((16,), latent_dim=6, num_layers=2, hidden_units=(8,), random_state=0)
      >>> model.latents_per_layer, len(model.priors)  # one conditional prior: p(z_1 | z_2)
      ((3, 3), 1)
      >>> model.encode(np.zeros((5, 16), "float32")).shape
      (5, 6)
    """

    conditional_prior = True
