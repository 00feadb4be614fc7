"""Architectures: chosen from the observation shape, overridable, with the documented layers."""
from __future__ import annotations

import keras
import numpy as np
import pytest

import hier_models
from hier_models.architectures import ConvSpec, DenseSpec, FlattenSpec, ReshapeSpec, architecture_spec


def layers_of(model, kind):
    return [layer for layer in model.layers if isinstance(layer, kind)]


@pytest.mark.parametrize(
    "shape, ladder, expected",
    [((64,), False, "mlp"), ((10,), True, "mlp"), ((64, 64, 1), False, "burgess"), ((64, 64, 3), False, "burgess"),
     ((64, 64, 3), True, "boxhead_small"), ((64, 64, 1), True, "boxhead_small")],
)
def test_default_architecture_follows_the_input_shape(shape, ladder, expected):
    assert hier_models.default_architecture(shape, ladder=ladder) == expected


def test_models_pick_their_architecture_from_the_input_shape():
    assert hier_models.VAE((64,), random_state=0).architecture == "mlp"
    assert hier_models.VAE((64, 64, 1), random_state=0).architecture == "burgess"
    assert hier_models.ProVLAE((64,), random_state=0).architecture == "mlp"
    with pytest.raises(ValueError, match="no default architecture"):
        hier_models.default_architecture((28, 28, 1))


def test_mlp_is_two_hidden_layers_of_256_and_overridable():
    enc = hier_models.build_encoder((64,), 20)
    assert [d.units for d in layers_of(enc, keras.layers.Dense)] == [256, 256, 20]
    dec = hier_models.build_decoder((64,), 10, hidden_units=(32, 16))
    assert [d.units for d in layers_of(dec, keras.layers.Dense)] == [32, 16, 64]
    assert dec.output.shape[1:] == (64,)


@pytest.mark.parametrize("channels", [1, 3])
def test_burgess_conv_architecture(channels):
    enc = hier_models.build_encoder((64, 64, channels), 2 * 10)
    convs = layers_of(enc, keras.layers.Conv2D)
    assert [(c.filters, c.kernel_size, c.strides) for c in convs] == [(32, (4, 4), (2, 2))] * 4
    assert [d.units for d in layers_of(enc, keras.layers.Dense)] == [256, 256, 20]
    dec = hier_models.build_decoder((64, 64, channels), 10)
    assert [d.units for d in layers_of(dec, keras.layers.Dense)] == [256, 256, 512]
    ups = layers_of(dec, keras.layers.Conv2DTranspose)
    assert [(u.filters, u.strides) for u in ups] == [(32, (2, 2))] * 3 + [(channels, (2, 2))]
    assert dec.output.shape[1:] == (64, 64, channels)
    assert not layers_of(enc, keras.layers.BatchNormalization)


@pytest.mark.parametrize("name", ["boxhead_small", "boxhead_large"])
def test_boxhead_single_layer_networks(name):
    enc = hier_models.build_encoder((64, 64, 3), 24, architecture=name)
    dec = hier_models.build_decoder((64, 64, 3), 12, architecture=name)
    assert enc.output.shape[1:] == (24,) and dec.output.shape[1:] == (64, 64, 3)
    assert layers_of(enc, keras.layers.BatchNormalization)
    acts = {layer.activation.__name__ for layer in layers_of(enc, keras.layers.Activation)}
    assert acts == {"leaky_relu"}
    convs = [(c.filters, c.kernel_size[0], c.strides[0]) for c in layers_of(enc, keras.layers.Conv2D)]
    if name == "boxhead_small":  # appendix table 1
        assert convs == [(64, 4, 2), (128, 4, 2), (256, 2, 2), (512, 2, 2)]
    else:  # table 2: 1x1 stride-2 convolutions and residual blocks
        assert convs[:3] == [(64, 1, 2), (64, 4, 1), (64, 4, 1)]
        assert len(layers_of(enc, keras.layers.Add)) == 3


def test_activation_override_gives_a_smooth_autoencoder():
    ae = hier_models.AE((64,), latent_dim=5, activation="softplus", random_state=0)
    for net in (ae.encoder, ae.decoder):
        acts = {layer.activation.__name__ for layer in layers_of(net, keras.layers.Activation)}
        assert acts == {"softplus"}
    relu = hier_models.AE((64,), latent_dim=5, random_state=0)
    assert {layer.activation.__name__ for layer in layers_of(relu.encoder, keras.layers.Activation)} == {"relu"}


def test_layer_names_are_deterministic():
    a = hier_models.build_encoder((64, 64, 1), 4)
    b = hier_models.build_encoder((64, 64, 1), 4)
    assert [layer.name for layer in a.layers] == [layer.name for layer in b.layers]


@pytest.mark.parametrize("shape, arch", [((64,), "mlp"), ((64, 64, 1), "burgess"), ((64, 64, 3), "burgess")])
def test_ladder_networks_fit_together(shape, arch):
    nets = hier_models.build_ladder(shape, (2, 3, 4), architecture=arch, conditional_prior=True)
    assert len(nets.bottom_up) == 3 and len(nets.ladder_encoders) == 2 and len(nets.top_down) == 3
    assert [h.output.shape[-1] for h in nets.posterior_heads] == [4, 6, 8]
    # layer l's decoded code has the shape of the stream it is concatenated with (output of g_(l+1))
    for layer in (1, 2):
        stream = nets.top_down[layer].output.shape[1:]
        assert nets.ladder_decoders[layer - 1].output.shape[1:] == stream
    assert nets.output.output.shape[1:] == shape
    # pro-LVAE priors read the codes of all layers above
    assert [p.input.shape[-1] for p in nets.priors] == [3 + 4, 4]
    assert [p.output.shape[-1] for p in nets.priors] == [2 * 2, 2 * 3]


def test_vlae_has_no_prior_networks_and_lvae_does():
    assert hier_models.ProVLAE((64,), random_state=0).priors == []
    assert len(hier_models.ProLVAE((64,), random_state=0).priors) == 2


def test_boxhead_ladder_spec_matches_the_appendix_tables():
    spec = architecture_spec("boxhead_small", (64, 64, 3), ladder_layers=3)
    # (NamedTuples compare as tuples, so the types are compared too)
    expected = (ConvSpec(128, 4, 2), ConvSpec(256, 4, 1), FlattenSpec(), DenseSpec(1024))
    assert spec.ladder_encoder == expected and list(map(type, spec.ladder_encoder)) == list(map(type, expected))
    decoder = spec.ladder_decoder((8, 8, 256))
    expected = (DenseSpec(1024), DenseSpec(8 * 8 * 256), ReshapeSpec((8, 8, 256)))
    assert decoder == expected and list(map(type, decoder)) == list(map(type, expected))


@pytest.mark.slow
@pytest.mark.parametrize("name, params", [("boxhead_small", 158_978_091), ("boxhead_large", 210_757_931)])
def test_boxhead_ladders_build_and_train_a_step(name, params):
    model = hier_models.ProLVAE((64, 64, 3), architecture=name, random_state=0)
    nets = [*model.bottom_up, *model.ladder_encoders, *model.posterior_heads, *model.ladder_decoders,
            *model.top_down, model.output_network, *model.priors]
    assert sum(n.count_params() for n in nets) == params
    model.compile()
    images = np.random.default_rng(0).random((8, 64, 64, 3)).astype(np.float32)
    history = model.fit(images, batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    codes = model.encode(images)
    assert codes.shape == (8, 12) and np.all(np.isfinite(codes))
