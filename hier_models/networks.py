"""Keras encoder and decoder networks built from :mod:`hier_models.architectures`.

Public builders, reusable by any model:

- :func:`build_encoder` ``(input_shape, output_dim)``: observation -> ``output_dim``
  linear outputs (a VAE asks for ``2 * latent_dim``: means and log variances);
- :func:`build_decoder` ``(input_shape, latent_dim)``: code -> logits (Bernoulli) or
  means (Gaussian) of the observation's shape;
- :func:`build_ladder` ``(input_shape, latents_per_layer)``: the pieces of a ladder
  network (:class:`LadderNetworks`).

Every layer gets a deterministic name, so weights saved in one process load in
another.
"""
from __future__ import annotations

import dataclasses

import keras

from hier_datasets.validation import check_input_shape, check_positive_int
from hier_models.architectures import (
    ArchitectureSpec,
    ConvSpec,
    DenseSpec,
    FlattenSpec,
    ReshapeSpec,
    ResidualSpec,
    UpSpec,
    architecture_spec,
)
from hier_models.distribute import synchronised

__all__ = ["OUTPUT_DTYPE", "LadderNetworks", "apply_stage", "build_decoder", "build_encoder", "build_ladder"]

#: dtype of every network's output layer: with a mixed-precision Keras policy
#: (``keras.mixed_precision.set_global_policy("mixed_float16")``) the hidden layers run
#: in 16 bits while codes, logits and every loss term stay in float32
OUTPUT_DTYPE = "float32"


class _Namer:
    """Deterministic, unique layer names inside one network."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.count = 0

    def __call__(self, kind: str) -> str:
        self.count += 1
        return f"{self.prefix}_{self.count}_{kind}"


def _batch_norm(name: str) -> keras.layers.BatchNormalization:
    """Batch normalisation; built under a ``tf.distribute`` strategy with several
    replicas, its statistics are those of the global batch (synchronised)."""
    return keras.layers.BatchNormalization(name=name, synchronized=synchronised())


def _normalise_and_activate(h, spec: ArchitectureSpec, activation: str, namer: _Namer):
    if spec.batch_norm:
        h = _batch_norm(namer("bn"))(h)
    return keras.layers.Activation(activation, name=namer("act"))(h)


def _linear_layer(op, namer: _Namer, dtype=None):
    if isinstance(op, ConvSpec):
        return keras.layers.Conv2D(
            op.filters, op.kernel, strides=op.stride, padding="same", name=namer("conv"), dtype=dtype
        )
    if isinstance(op, UpSpec):
        return keras.layers.Conv2DTranspose(
            op.filters, op.kernel, strides=op.stride, padding="same", name=namer("up"), dtype=dtype
        )
    if isinstance(op, DenseSpec):
        return keras.layers.Dense(op.units, name=namer("dense"), dtype=dtype)
    raise TypeError(f"not a weighted layer: {op!r}")


def apply_stage(h, ops, spec: ArchitectureSpec, activation: str, namer: _Namer, linear_last: bool = False):
    """Apply the layers ``ops`` to the Keras tensor ``h`` and return the result.

    Weighted layers are followed by batch norm (if the architecture uses it) and the
    activation, except the last one when ``linear_last``: that one is a network's
    output and computes in float32 (:data:`OUTPUT_DTYPE`) under any Keras dtype policy.
    """
    for i, op in enumerate(ops):
        last = i == len(ops) - 1
        if isinstance(op, FlattenSpec):
            h = keras.layers.Flatten(name=namer("flatten"))(h)
        elif isinstance(op, ReshapeSpec):
            h = keras.layers.Reshape(op.shape, name=namer("reshape"))(h)
        elif isinstance(op, ResidualSpec):
            skip = h
            h = keras.layers.Conv2D(op.filters, op.kernel, padding="same", name=namer("conv"))(h)
            h = _normalise_and_activate(h, spec, activation, namer)
            h = keras.layers.Conv2D(op.filters, op.kernel, padding="same", name=namer("conv"))(h)
            if spec.batch_norm:
                h = _batch_norm(namer("bn"))(h)
            h = keras.layers.Add(name=namer("add"))([skip, h])
            h = keras.layers.Activation(activation, name=namer("act"))(h)
        else:
            h = _linear_layer(op, namer, OUTPUT_DTYPE if last and linear_last else None)(h)
            if not (last and linear_last):
                h = _normalise_and_activate(h, spec, activation, namer)
    return h


def _spec(input_shape, architecture, hidden_units, ladder_layers=None):
    return architecture_spec(
        architecture, check_input_shape(input_shape), hidden_units=hidden_units, ladder_layers=ladder_layers
    )


def _chain(input_shape, stages, tail, spec: ArchitectureSpec, activation, name: str) -> keras.Model:
    """A model applying ``stages`` in order, then ``tail`` with a linear last layer."""
    activation = activation or spec.activation
    namer = _Namer(name)
    x = keras.Input(input_shape, name=f"{name}_input")
    h = x
    for stage in stages:
        h = apply_stage(h, stage, spec, activation, namer)
    return keras.Model(x, apply_stage(h, tail, spec, activation, namer, linear_last=True), name=name)


def build_encoder(
    input_shape,
    output_dim: int,
    *,
    architecture: str | None = None,
    activation: str | None = None,
    hidden_units=None,
    name: str = "encoder",
) -> keras.Model:
    """Observation -> ``output_dim`` linear outputs.

    ``architecture`` is one of :data:`hier_models.architectures.ARCHITECTURES`
    (default: from ``input_shape``); ``activation`` any Keras activation name
    (default: the architecture's, e.g. ``"softplus"`` for a smooth autoencoder);
    ``hidden_units`` the widths of an ``"mlp"``. The Boxhead architectures are used
    here with all three stages in sequence.
    """
    output_dim = check_positive_int(output_dim, "output_dim")
    spec = _spec(input_shape, architecture, hidden_units)
    return _chain(spec.input_shape, spec.encoder_stages, (DenseSpec(output_dim),), spec, activation, name)


def build_decoder(
    input_shape,
    latent_dim: int,
    *,
    architecture: str | None = None,
    activation: str | None = None,
    hidden_units=None,
    name: str = "decoder",
) -> keras.Model:
    """Code (``latent_dim``) -> linear outputs of shape ``input_shape`` (logits or means)."""
    latent_dim = check_positive_int(latent_dim, "latent_dim")
    spec = _spec(input_shape, architecture, hidden_units)
    return _chain((latent_dim,), tuple(reversed(spec.decoder_stages)), spec.output, spec, activation, name)


@dataclasses.dataclass
class LadderNetworks:
    """The pieces of an L-layer ladder network; lists are indexed by layer - 1.

    - ``bottom_up[l]``: h_(l+1), features of the stage below -> features (x for l = 0);
    - ``ladder_encoders[l]`` (l < L-1): features of stage l+1 -> flat vector;
    - ``posterior_heads[l]``: flat vector -> ``2 * k_(l+1)`` (means, log variances); the
      top head reads the top stage's flat features directly;
    - ``ladder_decoders[l]`` (l < L-1): z_(l+1) -> features concatenated with the
      top-down stream before g_(l+1);
    - ``top_down[l]``: g_(l+1); ``top_down[L-1]`` reads z_L, the others the
      concatenation of the stream and the ladder features;
    - ``output``: g_0, last top-down features -> logits or means of the observation;
    - ``priors[l]`` (l < L-1, only with ``conditional_prior``): concat(z_(l+2), ..., z_L)
      -> ``2 * k_(l+1)`` (prior means, log variances).
    """

    latents_per_layer: tuple
    bottom_up: list
    ladder_encoders: list
    posterior_heads: list
    ladder_decoders: list
    top_down: list
    output: keras.Model
    priors: list


def _model(inputs, ops, spec, activation, name, linear_last=False):
    namer = _Namer(name)
    h = apply_stage(inputs, ops, spec, activation, namer, linear_last=linear_last)
    return keras.Model(inputs, h, name=name)


def build_ladder(
    input_shape,
    latents_per_layer,
    *,
    architecture: str | None = None,
    activation: str | None = None,
    hidden_units=None,
    conditional_prior: bool = False,
    prior_units: int = 256,
) -> LadderNetworks:
    """Build the sub-networks of a ladder with ``len(latents_per_layer)`` latent layers.

    ``latents_per_layer[l]`` is the size of layer l+1 (layer 1 lowest). With
    ``conditional_prior`` (pro-LVAE), each lower layer also gets a prior network: an
    MLP with one hidden layer of ``prior_units`` on the concatenated codes of all
    layers above.
    """
    sizes = tuple(check_positive_int(k, f"latents_per_layer[{i}]") for i, k in enumerate(latents_per_layer))
    num_layers = len(sizes)
    spec = _spec(input_shape, architecture, hidden_units, ladder_layers=num_layers)
    activation = activation or spec.activation

    bottom_up, features = [], []
    h_in = keras.Input(spec.input_shape, name="bottom_up_1_input")
    for layer in range(1, num_layers + 1):
        model = _model(h_in, spec.encoder_stages[layer - 1], spec, activation, f"bottom_up_{layer}")
        bottom_up.append(model)
        features.append(model.output.shape[1:])
        h_in = keras.Input(model.output.shape[1:], name=f"bottom_up_{layer + 1}_input")

    ladder_encoders, heads = [], []
    for layer in range(1, num_layers + 1):
        if layer < num_layers:
            enc = _model(keras.Input(features[layer - 1]), spec.ladder_encoder, spec, activation, f"ladder_encoder_{layer}")
            ladder_encoders.append(enc)
            flat = enc.output.shape[1:]
        else:
            flat = features[-1]
        head_in = keras.Input(flat)
        heads.append(
            keras.Model(
                head_in,
                keras.layers.Dense(2 * sizes[layer - 1], name=f"posterior_{layer}_dense", dtype=OUTPUT_DTYPE)(head_in),
                name=f"posterior_{layer}",
            )
        )

    top_down = [None] * num_layers
    ladder_decoders = [None] * (num_layers - 1)
    stream = None
    for layer in range(num_layers, 0, -1):
        if layer == num_layers:
            inputs = keras.Input((sizes[-1],), name=f"top_down_{layer}_input")
        else:
            dec = _model(
                keras.Input((sizes[layer - 1],)),
                spec.ladder_decoder(stream),
                spec,
                activation,
                f"ladder_decoder_{layer}",
            )
            ladder_decoders[layer - 1] = dec
            merged = stream[:-1] + (stream[-1] + dec.output.shape[-1],)
            inputs = keras.Input(merged, name=f"top_down_{layer}_input")
        model = _model(inputs, spec.decoder_stages[layer - 1], spec, activation, f"top_down_{layer}")
        top_down[layer - 1] = model
        stream = tuple(model.output.shape[1:])
    output = _model(keras.Input(stream), spec.output, spec, activation, "output", linear_last=True)

    priors = []
    if conditional_prior:
        prior_units = check_positive_int(prior_units, "prior_units")
        for layer in range(1, num_layers):
            above = sum(sizes[layer:])
            p_in = keras.Input((above,))
            h = keras.layers.Dense(prior_units, activation=activation, name=f"prior_{layer}_hidden")(p_in)
            out = keras.layers.Dense(2 * sizes[layer - 1], name=f"prior_{layer}_out", dtype=OUTPUT_DTYPE)(h)
            priors.append(keras.Model(p_in, out, name=f"prior_{layer}"))

    return LadderNetworks(sizes, bottom_up, ladder_encoders, heads, ladder_decoders, top_down, output, priors)
