"""hier_models: Keras 3 models for hierarchical disentanglement and the hierbench command line."""
