"""``hierbench evaluate``'s work: score a saved model, or codes from any framework, with
every applicable metric."""
from __future__ import annotations

from pathlib import Path

from hier_models.recipes import code_hierarchy, encode, score
from hierbench.datasets import load_split, prepare, resolve_dataset
from hierbench.errors import CommandError
from hierbench.files import check_writable, write_json
from hierbench.models import load_model, training_record
from hierbench.scoring import check_codes, load_codes, load_hierarchy

__all__ = ["evaluate"]


def evaluate(
    dataset_name: str | None,
    split: str = "test",
    *,
    model_path=None,
    codes_path=None,
    hierarchy_path=None,
    out=None,
    data_dir: str | None = None,
    seed: int = 0,
    interventional_points: int = 2000,
    show_progress: bool = True,
) -> dict:
    """Score a saved model or a ``.npy`` file of codes on ``split`` (see
    :func:`hier_models.recipes.score`); writes the result to ``out`` (JSON) when
    given and returns it.

    Everything that can be checked before the dataset is read is checked first:
    the names, the output path, and the codes' shape against ``hierarchy_path``.
    """
    if (model_path is None) == (codes_path is None):
        raise CommandError("give either a saved model or a codes file")
    if codes_path is not None:
        if dataset_name is None:
            raise CommandError("--codes needs --dataset NAME: the dataset whose split the rows follow")
        source, model = str(codes_path), None
        hierarchy = None if hierarchy_path is None else load_hierarchy(hierarchy_path)
        codes = check_codes(load_codes(codes_path), hierarchy, source=source)
    else:
        if hierarchy_path is not None:
            raise CommandError("--code-hierarchy goes with --codes; a saved model brings its own hierarchy")
        source, model = str(model_path), load_model(model_path)
        dataset_name = dataset_name or training_record(model_path).get("settings", {}).get("dataset")
        if dataset_name is None:
            raise CommandError(f"no training record beside {model_path}; say which data to score with --dataset NAME")
        hierarchy = code_hierarchy(model)
    dataset = resolve_dataset(dataset_name)
    if out is not None:
        check_writable(out, kind="file")
    data = load_split(prepare(dataset, data_dir), split, show_progress=show_progress)
    if model is None:
        codes = check_codes(codes, hierarchy, source=source, data=data)
        representation = None
    else:
        codes = encode(model, data.observations, data.scale)
        representation = lambda obs: encode(model, obs, data.scale)  # noqa: E731
    metrics = score(data, codes, hierarchy=hierarchy, representation=representation,
                    interventional_points=interventional_points, random_state=seed, show_progress=show_progress)
    result = dict(dataset=dataset.name, split=split, num_examples=len(data), representation=source, **metrics)
    if out is not None:
        write_json(Path(out), result)
    return result
