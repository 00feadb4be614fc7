"""Network architectures as data: which layers each stage of an encoder or decoder has.

An :class:`ArchitectureSpec` lists the stages of a network in a tiny layer language
(see :mod:`hier_models.networks`, which turns specs into Keras models):

- ``ConvSpec(filters, kernel, stride)``: a 'same'-padded convolution;
- ``UpSpec(filters, kernel, stride)``: a 'same'-padded transposed convolution;
- ``DenseSpec(units)``, ``FlattenSpec()``, ``ReshapeSpec(shape)``;
- ``ResidualSpec(filters, kernel)``: two stride-1 convolutions added to the input.

Every hidden layer is followed by batch normalisation when the architecture uses it
and then by the activation; the last layer of the decoder is linear (logits or means).

Built-in architectures (``ARCHITECTURES``):

- ``"mlp"``: fully connected, for 1-D observations such as 64-point series. As a
  single-layer network: ``hidden_units`` (default 256, 256) then the head; as a
  ladder: every stage is ``hidden_units`` (default 256). ReLU, no batch norm.
- ``"burgess"``: Burgess et al. (2018), for 64x64xC images: four 4x4 stride-2
  convolutions of 32 channels, FC 256, FC 256; the decoder mirrors it. ReLU, no
  batch norm. As a ladder (not in the papers; a light alternative to the Boxhead
  networks, which hold 159M / 211M parameters as ladders): the same layers cut
  into three stages at 16x16 and 8x8; lower layers encode through conv 32/4/2 and
  FC 256 and decode through FC 256 and an FC layer to the stream's shape.
- ``"boxhead_small"`` / ``"boxhead_large"``: the Boxhead paper's appendix tables 1-4
  (Chen et al.), for 64x64xC images, three stages (three ladder layers). Leaky ReLU,
  batch norm. The large one replaces plain convolutions by 1x1 convolutions and
  residual blocks. Lower ladder layers encode from the bottom-up features of their
  stage with conv 128/4/2, conv 256/4/1, FC 1024 and decode through FC 1024 and an FC
  layer to the shape of the top-down features they are concatenated with.

:func:`default_architecture` picks ``"mlp"`` for 1-D inputs and, for 64x64 images,
``"burgess"`` (single-layer models) or ``"boxhead_small"`` (ladders).

The Boxhead paper trains every model at two capacities on *equivalent* networks
(appendix B.2: "All models have equivalent network layers"): :data:`CAPACITIES`
maps ``"small"`` to ``"boxhead_small"`` (tables 1 and 3) and ``"large"`` to
``"boxhead_large"`` (tables 2 and 4), and :func:`capacity_architecture` resolves a
``capacity`` choice. A single-layer model on a Boxhead architecture runs the stages
h_1 .. h_3 in sequence and decodes through g_3 .. g_0 (the ladder's networks without
the ladder encoders and decoders); a ladder adds the ladder parts of tables 3 and 4.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, NamedTuple

from hier_datasets.validation import check_choice, check_units

__all__ = [
    "ARCHITECTURES",
    "ArchitectureSpec",
    "ConvSpec",
    "DenseSpec",
    "FlattenSpec",
    "ReshapeSpec",
    "ResidualSpec",
    "UpSpec",
    "CAPACITIES",
    "architecture_spec",
    "capacity_architecture",
    "default_architecture",
]


class ConvSpec(NamedTuple):
    filters: int
    kernel: int
    stride: int


class UpSpec(NamedTuple):
    filters: int
    kernel: int
    stride: int


class DenseSpec(NamedTuple):
    units: int


class FlattenSpec(NamedTuple):
    pass


class ReshapeSpec(NamedTuple):
    shape: tuple


class ResidualSpec(NamedTuple):
    filters: int
    kernel: int


@dataclasses.dataclass(frozen=True)
class ArchitectureSpec:
    """The stages of one architecture for one observation shape.

    ``encoder_stages[l]`` is the bottom-up stage h_(l+1) (the last one ends in a flat
    feature vector); ``decoder_stages[l]`` is the top-down stage g_(l+1), the last
    entry g_L being the first applied (from the top latent); ``output`` maps the
    last decoder features to the observation's logits or means, its last layer
    linear. ``ladder_encoder`` maps the features of a lower stage to a flat vector
    and ``ladder_decoder(shape)`` maps a latent to features of ``shape``.
    """

    name: str
    input_shape: tuple
    activation: str
    batch_norm: bool
    encoder_stages: tuple
    decoder_stages: tuple
    output: tuple
    ladder_encoder: tuple
    ladder_decoder: Callable[[tuple], tuple]

    @property
    def num_stages(self) -> int:
        return len(self.encoder_stages)


def _image_channels(name: str, input_shape: tuple) -> int:
    if len(input_shape) != 3 or input_shape[:2] != (64, 64):
        raise ValueError(
            f"input_shape {input_shape} is not supported by architecture {name!r}: "
            "it takes 64x64 images, input_shape (64, 64, channels)"
        )
    return input_shape[2]


def _mlp(input_shape, hidden_units, ladder_layers):
    if len(input_shape) != 1:
        raise ValueError(
            f"input_shape {input_shape} is not supported by architecture 'mlp': it takes 1-D observations, "
            "input_shape (length,)"
        )
    default = (256, 256) if ladder_layers is None else (256,)
    units = check_units(default if hidden_units is None else hidden_units, "hidden_units")
    stage = tuple(DenseSpec(u) for u in units)
    num_layers = ladder_layers or 1
    return ArchitectureSpec(
        name="mlp",
        input_shape=input_shape,
        activation="relu",
        batch_norm=False,
        encoder_stages=(stage,) * num_layers,
        decoder_stages=(stage,) * num_layers,
        output=(DenseSpec(input_shape[0]),),
        ladder_encoder=(DenseSpec(units[-1]),),
        ladder_decoder=lambda shape: (DenseSpec(math.prod(shape)), ReshapeSpec(tuple(shape))),
    )


def _burgess(input_shape, hidden_units, ladder_layers):
    channels = _image_channels("burgess", input_shape)
    if ladder_layers is None:
        encoder_stages = ((ConvSpec(32, 4, 2),) * 4 + (FlattenSpec(), DenseSpec(256), DenseSpec(256)),)
        decoder_stages = (
            (DenseSpec(256), DenseSpec(256), DenseSpec(4 * 4 * 32), ReshapeSpec((4, 4, 32))) + (UpSpec(32, 4, 2),) * 3,
        )
    else:
        # The same layers cut into three ladder stages (features 16x16, 8x8, flat).
        encoder_stages = (
            (ConvSpec(32, 4, 2), ConvSpec(32, 4, 2)),
            (ConvSpec(32, 4, 2),),
            (ConvSpec(32, 4, 2), FlattenSpec(), DenseSpec(256), DenseSpec(256)),
        )
        decoder_stages = (
            (UpSpec(32, 4, 2),),  # g1: 16x16 -> 32x32
            (UpSpec(32, 4, 2),),  # g2: 8x8 -> 16x16
            # g3: -> 8x8
            (DenseSpec(256), DenseSpec(256), DenseSpec(4 * 4 * 32), ReshapeSpec((4, 4, 32)), UpSpec(32, 4, 2)),
        )

    def ladder_decoder(shape):
        return (DenseSpec(256), DenseSpec(math.prod(shape)), ReshapeSpec(tuple(shape)))

    return ArchitectureSpec(
        name="burgess",
        input_shape=input_shape,
        activation="relu",
        batch_norm=False,
        encoder_stages=encoder_stages,
        decoder_stages=decoder_stages,
        output=(UpSpec(channels, 4, 2),),
        ladder_encoder=(ConvSpec(32, 4, 2), FlattenSpec(), DenseSpec(256)),
        ladder_decoder=ladder_decoder,
    )


def _boxhead(name, input_shape, encoder_stages, decoder_stages):
    """A Boxhead architecture: the given stages; the ladder parts of tables 3 and 4."""
    channels = _image_channels(name, input_shape)

    def ladder_decoder(shape):
        return (DenseSpec(1024), DenseSpec(math.prod(shape)), ReshapeSpec(tuple(shape)))

    return ArchitectureSpec(
        name=name,
        input_shape=input_shape,
        activation="leaky_relu",
        batch_norm=True,
        encoder_stages=encoder_stages,
        decoder_stages=decoder_stages,
        output=(UpSpec(channels, 4, 2),),
        ladder_encoder=(ConvSpec(128, 4, 2), ConvSpec(256, 4, 1), FlattenSpec(), DenseSpec(1024)),
        ladder_decoder=ladder_decoder,
    )


def _boxhead_small(input_shape, hidden_units, ladder_layers):
    encoder_stages = (
        (ConvSpec(64, 4, 2),),
        (ConvSpec(128, 4, 2),),
        (ConvSpec(256, 2, 2), ConvSpec(512, 2, 2), FlattenSpec(), DenseSpec(1024)),
    )
    decoder_stages = (
        (UpSpec(128, 4, 2), ConvSpec(64, 4, 1)),  # g1
        (ConvSpec(256, 4, 1), UpSpec(128, 4, 2)),  # g2
        (DenseSpec(1024), DenseSpec(4 * 4 * 512), ReshapeSpec((4, 4, 512)), UpSpec(256, 4, 2)),  # g3
    )
    return _boxhead("boxhead_small", input_shape, encoder_stages, decoder_stages)


def _boxhead_large(input_shape, hidden_units, ladder_layers):
    encoder_stages = (
        (ConvSpec(64, 1, 2), ResidualSpec(64, 4)),
        (ConvSpec(128, 1, 2), ResidualSpec(128, 4)),
        (ConvSpec(256, 1, 2), ResidualSpec(256, 2), ConvSpec(512, 2, 2), FlattenSpec(), DenseSpec(1024)),
    )
    decoder_stages = (
        (ConvSpec(64, 1, 1), ResidualSpec(64, 4)),  # g1
        (ConvSpec(128, 1, 1), ResidualSpec(128, 4), UpSpec(64, 4, 2)),  # g2
        (
            DenseSpec(1024),
            DenseSpec(4 * 4 * 512),
            ReshapeSpec((4, 4, 512)),
            UpSpec(256, 4, 2),
            UpSpec(256, 1, 2),
            ResidualSpec(256, 4),
            ConvSpec(128, 4, 1),
        ),  # g3
    )
    return _boxhead("boxhead_large", input_shape, encoder_stages, decoder_stages)


_BUILDERS = {
    "mlp": _mlp,
    "burgess": _burgess,
    "boxhead_small": _boxhead_small,
    "boxhead_large": _boxhead_large,
}
ARCHITECTURES = tuple(_BUILDERS)
#: the Boxhead paper's two capacities (appendix B.2) and their architectures
CAPACITIES = {"small": "boxhead_small", "large": "boxhead_large"}


def capacity_architecture(capacity: str, architecture: str | None = None) -> str:
    """The architecture of a Boxhead ``capacity`` (``"small"`` or ``"large"``, see
    :data:`CAPACITIES`); ValueError for another capacity, or for an ``architecture``
    given as well that is not the capacity's."""
    check_choice(capacity, "capacity", CAPACITIES)
    name = CAPACITIES[capacity]
    if architecture is not None and architecture != name:
        raise ValueError(
            f"capacity={capacity!r} means architecture {name!r}, but architecture={architecture!r} was given; "
            "give one of them"
        )
    return name


def default_architecture(input_shape, ladder: bool = False) -> str:
    """``"mlp"`` for 1-D observations; ``"burgess"`` (or ``"boxhead_small"`` for a
    ladder) for 64x64 images with any number of channels; ValueError otherwise."""
    shape = tuple(input_shape)
    if len(shape) == 1:
        return "mlp"
    if len(shape) == 3 and shape[:2] == (64, 64):
        return "boxhead_small" if ladder else "burgess"
    raise ValueError(
        f"input_shape {shape} has no default architecture: expected 1-D observations (length,) "
        "or 64x64 images (64, 64, channels)"
    )


def architecture_spec(name, input_shape, *, hidden_units=None, ladder_layers: int | None = None) -> ArchitectureSpec:
    """The stages of architecture ``name`` (None: the default) for ``input_shape``.

    ``ladder_layers=None`` asks for a single-layer network; a ladder asks for its
    number of latent layers, which must equal the architecture's stage count (3 for
    the convolutional architectures; any number for ``"mlp"``). ``hidden_units`` applies
    to ``"mlp"`` only.
    """
    ladder = ladder_layers is not None
    name = default_architecture(input_shape, ladder=ladder) if name is None else name
    check_choice(name, "architecture", ARCHITECTURES)
    if hidden_units is not None and name != "mlp":
        raise ValueError(f"hidden_units applies to architecture 'mlp' only, got architecture {name!r}")
    spec = _BUILDERS[name](tuple(input_shape), hidden_units, ladder_layers)
    if ladder and ladder_layers != spec.num_stages:
        raise ValueError(f"architecture {name!r} has {spec.num_stages} ladder layers, got num_layers={ladder_layers}")
    return spec
