"""``hierbench train``: train one model and save it with its training history."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hierbench import library_facts
from hierbench.cli import COMMANDS
from hierbench.cli.arguments import DATASET_HELP, add_command, add_common, add_training_options, hyperparameter_help, positive
from hierbench.settings import DEFAULT_RUN

__all__ = ["register"]


def _train(args) -> int:
    # the model code is imported here, not above, so that --help answers without TensorFlow
    from hier_models import distribute
    from hier_models.hierarchical import halving_rungs
    from hierbench import options
    from hierbench.datasets import load_split, prepare, resolve_dataset
    from hierbench.files import check_writable
    from hierbench.models import save_training, train
    from hierbench.run_folders import HALVING_CHECKPOINT, checkpoint_folder

    # first: a multi-worker strategy configures its collectives before TensorFlow runs anything
    strategy = distribute.get_strategy(args.strategy)
    chief = distribute.is_chief(strategy)
    dataset = resolve_dataset(args.dataset)
    model = options.resolve_model(args.model)
    settings = options.parse_options(args.set, [model])[model]
    grid = options.PAPER_GRID if args.grid or args.halving else None
    rungs = halving_rungs(args.epochs) if args.halving else None
    options.check_grid(model, grid, settings)
    if model == options.HIERARCHICAL:
        options.initial_dim(dataset, settings)
    # the other workers of a cluster train in step with the chief, which writes the model; they save
    # too (reading distributed variables may take every worker), into a folder that is then removed
    out = check_writable(args.out) if chief else Path(tempfile.mkdtemp(prefix="hierbench-worker-"))
    data = load_split(prepare(dataset, args.data_dir), args.split, show_progress=not args.quiet)
    trained = train(model, data, epochs=args.epochs, autoencoder_epochs=args.autoencoder_epochs,
                    batch_size=args.batch_size, seed=args.seed, latent_dim=args.latent_dim, options=settings,
                    show_progress=not args.quiet, grid=grid, rungs=rungs, strategy=args.strategy,
                    checkpoint=checkpoint_folder(out, model, data.family, args.halving))
    written = save_training(trained, out)
    shutil.rmtree(out / HALVING_CHECKPOINT, ignore_errors=True)
    if not chief:
        shutil.rmtree(out, ignore_errors=True)
        print(f"{model} trained on {len(data)} examples of {dataset.name} as a worker; the chief wrote the model")
        return 0
    print(f"{model} trained on {len(data)} examples of {dataset.name} in {trained.seconds:.0f} s")
    if "grid" in trained.settings:
        print(f"grid of {len(trained.settings['grid'])} COFHAE runs; selected {trained.settings['selected']}")
    if "selection" in trained.settings:
        chosen = trained.settings["selection"]
        print(f"successive halving over {len(chosen['points'])} COFHAE configurations (rungs at epochs "
              f"{', '.join(map(str, chosen['rungs']))}); selected {trained.settings['selected']}; best first: "
              + "; ".join(chosen["ranking"][:3]))
    for stage, history in trained.history.items():
        epochs = max((len(v) for v in history.values()), default=0)
        print(f"  {stage} after {epochs} epochs: " + ", ".join(f"{k} {v[-1]:.4g}" for k, v in history.items() if v))
    if trained.hierarchy is not None:
        scores = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in trained.mimosa_scores.items())
        print(f"MIMOSA hierarchy ({scores}):\n{trained.hierarchy}")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def register(sub) -> None:
    """Add ``train`` to ``sub``, with the main job's defaults."""
    defaults = DEFAULT_RUN
    hierarchical = library_facts.constant(library_facts.REGISTRY, "HIERARCHICAL")
    p = add_command(
        sub, "train", _train, summary=COMMANDS["train"],
        description="Train one model on the train split of a dataset and save it to --out: model.keras and "
                    f"history.json (settings, per-epoch losses; for {hierarchical} also MIMOSA's purity, "
                    "coverage and H-error on the training data), and for "
                    f"{hierarchical} smooth_autoencoder.keras, hierarchy.json, assignments.npy and "
                    "initial_codes.npy.",
        epilog=hyperparameter_help() + "\n\nexample: hierbench train --dataset chopsticks/depth2_either_20000_5000 "
               "--model BetaTCVAE --set beta=4 --out runs/btc",
    )
    p.add_argument("--dataset", required=True, metavar="NAME", help=DATASET_HELP)
    p.add_argument("--model", required=True, metavar="MODEL", help=f"one of {', '.join(library_facts.model_names())}")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder for the saved model (created if missing)")
    p.add_argument("--split", default="train", metavar="SPLIT", help="split to train on (default %(default)s; TFDS slices work)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of initialisation, shuffling and noise (default 0)")
    p.add_argument("--latent-dim", type=positive, default=None, metavar="N",
                   help="number of codes of a flat model (default: the dataset's number of factors)")
    add_training_options(p, defaults)
    add_common(p)
