"""Argument types and options that several commands share."""
from __future__ import annotations

import argparse
import textwrap

from hierbench import library_facts
from hierbench.library_facts import REGISTRY, constant

# the help describes the models from the library's source (hierbench.library_facts), so
# that every command shows its help without importing TensorFlow

__all__ = [
    "DATASET_HELP",
    "add_command",
    "add_common",
    "add_interventional_option",
    "add_training_options",
    "hyperparameter_help",
    "non_negative",
    "positive",
]

DATASET_HELP = (
    "dataset as for tfds.load: chopsticks/depth{2,3}_{slope,inter,both,either}, spaceshapes, "
    "boxhead/boxhead{1,2,3}; append _TRAIN_TEST (e.g. chopsticks/depth2_either_20000_5000) for a resized "
    "config of the same process, built on first use"
)


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def hyperparameter_help() -> str:
    hierarchical = constant(REGISTRY, "HIERARCHICAL")
    lines = ["hyperparameters (--set KEY=VALUE; VALUE is read as JSON, else as text):"]
    for model in library_facts.model_names():
        names = ", ".join(library_facts.hyperparameter_names(model))
        lines += textwrap.wrap(f"{model}: {names}", width=88, initial_indent="  ", subsequent_indent="      ")
    text = (
        f"{hierarchical} is the whole method of Ross & Doshi-Velez (2021): a Softplus autoencoder with initial_dim "
        "codes (default per dataset, as in the paper) trained for --autoencoder-epochs, MIMOSA on its codes "
        f"(hyperparameters {', '.join(library_facts.mimosa_options())}), then COFHAE on the learned hierarchy; its "
        "report rows say COFHAE (MIMOSA hierarchy). Every model trains with Adam at 1e-3, divided by 10 at half and by 100 at "
        "three quarters of the steps (the paper's schedule; on Boxhead, see below). COFHAE trains once with "
        "tau=1, lambda_assign=100, lambda_tc=10 (the authors' code's defaults, the middle of the paper's grid for "
        "both penalties); --grid trains the paper's 27 configurations instead."
    )
    return "\n".join(lines) + "\n\n" + textwrap.fill(text, width=88) + "\n\n" + textwrap.fill(_boxhead_help(), width=88)


def _boxhead_help() -> str:
    """The Boxhead protocol's paragraph of :func:`hyperparameter_help`
    (:mod:`hier_models.protocols`)."""
    protocol = {name: constant("hier_models.protocols", name) for name in (
        "PAPER_STEPS", "BETA_START", "LEARNING_RATE", "LATENT_DIM", "LATENTS_PER_LAYER", "GAMMA", "SCHEDULE_SHARE")}
    paper = protocol["PAPER_STEPS"]
    start = protocol["BETA_START"]
    latents = protocol["LATENTS_PER_LAYER"]
    learning_rate = f"{protocol['LEARNING_RATE']:.0e}".replace("e-0", "e-")
    return (
        "On a Boxhead dataset (boxhead/boxhead1-3) the flat models follow the Boxhead paper's protocol instead "
        "(Chen et al. 2022, section 5 and appendices A-B, with its authors' optimiser): "
        f"{protocol['LATENT_DIM']} codes (the ladders: {len(latents)} layers of "
        f"{latents[0]}), the small networks of its appendix B.2 (--set "
        f"capacity=large for the large ones), beta annealed down to its value from {start['single_layer']:g} "
        f"over {paper['single_layer_anneal']:,} steps (beta-VAE, beta-TCVAE) or from {start['top']:g} over "
        f"{paper['top_anneal']:,} (the ladders' top layer; --set beta_start=null warms it up from 0 instead), "
        f"the lower ladder layers faded in over {paper['fade_in']:,} steps each with KL weight "
        f"gamma={protocol['GAMMA']:g} before, the whole timetable shrunk by one factor to end by "
        f"{protocol['SCHEDULE_SHARE']:.0%} of a shorter run, and Adamax at {learning_rate} without decay "
        "for every model; --set and --latent-dim override any part of it."
    )


def _wrap(text: str) -> str:
    return "\n\n".join(textwrap.fill(par, width=88) for par in text.split("\n\n"))


def add_command(sub, name: str, func, *, summary: str, description: str, epilog: str = ""):
    """A subcommand parser whose ``func`` default runs it."""
    p = sub.add_parser(name, help=summary, description=_wrap(description), epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    p.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                   help="on an error, show the whole Python traceback "
                        "(also HIERBENCH_TRACEBACK=1)")
    return p


def add_common(p, *, data_dir: bool = True, quiet: bool = True) -> None:
    if data_dir:
        p.add_argument("--data-dir", default=None, metavar="DIR",
                       help="TFDS data dir (default: TFDS's own, ~/tensorflow_datasets)")
    if quiet:
        p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_training_options(p, defaults) -> None:
    hierarchical = constant(REGISTRY, "HIERARCHICAL")
    p.add_argument("--epochs", type=positive, metavar="N", default=defaults.epochs,
                   help="training epochs of each model (default %(default)s); a flat or ladder model on non-Boxhead "
                        "data saves its fit in the model's folder (backup/) at each epoch's end: if the command "
                        "stops, the same command again trains only the epochs left")
    p.add_argument("--autoencoder-epochs", type=positive, default=defaults.autoencoder_epochs, metavar="N",
                   help=f"epochs of {hierarchical}'s smooth autoencoder, before MIMOSA (default %(default)s: it is "
                        "cheap, and MIMOSA needs converged codes)")
    p.add_argument("--batch-size", type=positive, metavar="N", default=defaults.batch_size,
                   help="batch size (default %(default)s)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model hyperparameter, repeatable; see the list below")
    p.add_argument("--grid", action="store_true",
                   help=f"{hierarchical}: train COFHAE at the paper's 27 configurations (tau 0.5/0.67/1, "
                        "lambda_assign 10/100/1000, lambda_tc 1/10/100) on one MIMOSA result and keep the run with "
                        "the lowest training reconstruction among the third with the lowest assignment loss (27x "
                        "COFHAE's training time); without it, one run with the defaults")
    p.add_argument("--halving", action="store_true",
                   help=f"{hierarchical}: the paper's selection over the same 27 configurations at about a fifth of "
                        "--grid's cost: successive halving (all 27 for 6%% of --epochs, the best third by the "
                        "paper's rule to 20%%, the best three to the end, on one learning-rate schedule), a progress "
                        "bar per configuration; the report names the choice and shows the ranking. Each "
                        "configuration is saved in the model's folder (halving/) as it finishes a rung: if the "
                        "command stops, the same command again resumes the selection there")
    p.add_argument("--strategy", choices=constant("hier_models.distribute", "STRATEGIES"), default=None,
                   help="train on several devices with tf.distribute: mirrored (every GPU of this machine) or "
                        "multiworker (several machines, each running the same command, TF_CONFIG naming the cluster "
                        "and the machine's task; the chief writes the results); --batch-size is the global batch, "
                        "split over the replicas (default: one device)")


def add_interventional_option(p, default: int) -> None:
    p.add_argument("--interventional-points", type=non_negative, default=default, metavar="N",
                   help="training votes of the FactorVAE / beta-VAE scores, half as many for evaluation; "
                        "0 skips them (default %(default)s; disentanglement_lib uses 10000)")
