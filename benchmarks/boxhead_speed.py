"""Boxhead rendering speed: the reused scene against a naive render that rebuilds it per image.

Measures, on this machine and with the renderer that VTK picks here (headless: EGL with
Mesa's llvmpipe):

- ``ours``: one scene built once, per image only colours, scale and camera updated
  (``hier_datasets.boxhead.scene.Scene``), in this process, one core;
- ``naive``: per image, Open3D meshes, a PyVista plotter and its render window built,
  one render, everything released;
- ``processes``: the dataset path, ``Boxhead(workers=k)``: rendering processes that
  each hold one scene, batch cut into k slices (IPC included, start-up excluded);
- a profile of ``ours`` (where the time goes);
- a TFDS build of ``boxhead1`` at a small size (in its own process), end to end.

Timings of ``ours`` are the best of three runs. Rates are images per second of wall
time and images per CPU second of the measuring process (the latter is what a core
delivers when the machine is busy with other work).
Results go to ``docs/results/boxhead_speed.json`` and ``.md``::

    python -m benchmarks.boxhead_speed [--images 5000] [--naive-images 100] [--build 5000]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.study import RESULTS
from hier_datasets.boxhead import Boxhead, workers
from hier_datasets.boxhead import scene as boxhead_scene

#: timings of ours are the best of this many runs (the machine may be shared)
REPEATS = 3


def timed(fn, *args):
    """(result, wall seconds, CPU seconds of this process incl. its threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def naive(factors: np.ndarray) -> np.ndarray:
    """Rebuild the whole scene (meshes, plotter, window) for every image."""
    out = []
    for row in factors:
        scene = boxhead_scene.Scene()
        out.append(scene.render(row[None])[0])
        scene.close()
    return np.stack(out)


def rate(n, seconds) -> float:
    return round(n / seconds, 1) if seconds > 0 else float("nan")


def profile(scene, factors, top=12) -> list[dict]:
    prof = cProfile.Profile()
    prof.enable()
    scene.render(factors)
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO())
    total = stats.total_tt
    rows = []
    for (filename, line, name), (_, ncalls, tottime, _, _) in stats.stats.items():
        where = name if filename == "~" else f"{Path(filename).name}:{line}({name})"
        rows.append({"function": where, "calls": ncalls, "seconds": round(tottime, 4), "share": round(tottime / total, 3)})
    return sorted(rows, key=lambda r: -r["seconds"])[:top]


def breakdown(scene, factors, frames=1000) -> dict:
    """CPU milliseconds per frame (best of REPEATS) when only some of the per-image updates are made.

    CPU time of this process, not wall time: with ``LP_NUM_THREADS=0`` all the
    rendering runs in this thread, and CPU time is not inflated by other load.
    """
    frames = min(frames, len(factors))
    colours = boxhead_scene.hue_to_rgb(factors[:frames, boxhead_scene._HUE_COLUMNS]).tolist()
    props = [scene.actors[name].GetProperty() for name in boxhead_scene.PAINTED]

    def per_frame(update) -> float:
        best = math.inf
        for _ in range(REPEATS):
            start = time.process_time()
            for i in range(frames):
                update(i)
                scene.window.Render()
            best = min(best, time.process_time() - start)
        return round(best / frames * 1e3, 3)

    def set_uniforms(i):
        for uniforms, colour in zip(scene._colours, colours[i]):
            uniforms.SetUniform3f(boxhead_scene._COLOUR, colour)

    def set_properties(i):
        # what the scene avoids: vtkProperty colours (ignored by its shaders, but their change costs)
        for prop, colour in zip(props, colours[i]):
            prop.SetColor(colour)

    def move_camera(i):
        scene.camera.SetPosition(boxhead_scene.camera_position(factors[i, boxhead_scene._AZIMUTH]))

    return {
        "render_only_nothing_changed": per_frame(lambda i: None),
        "render_after_camera_move": per_frame(move_camera),
        "render_after_colour_uniforms_change": per_frame(set_uniforms),
        "render_after_vtkproperty_colours_change": per_frame(set_properties),
    }


BUILD = """
import sys, tempfile, time
from hier_datasets.boxhead import Boxhead, BoxheadBuilder
from hier_datasets.builder import sized_config
train, test = int(sys.argv[1]), int(sys.argv[2])
rendering = [0.0]
observations = Boxhead._observations

def timed_observations(self, factors, rng):
    start = time.perf_counter()
    try:
        return observations(self, factors, rng)
    finally:
        rendering[0] += time.perf_counter() - start

Boxhead._observations = timed_observations
with tempfile.TemporaryDirectory() as tmp:
    builder = BoxheadBuilder(config=sized_config("boxhead1", train, test), data_dir=tmp)
    start = time.perf_counter()
    builder.download_and_prepare()
    print(time.perf_counter() - start, rendering[0])
"""


def tfds_build(train: int) -> dict:
    """Wall time of a TFDS build and of its rendering (own process: TensorFlow and Mesa cannot share one)."""
    test = max(1, train // 10)
    out = subprocess.run([sys.executable, "-c", BUILD, str(train), str(test)], capture_output=True, text=True, check=True)
    seconds, rendering = map(float, out.stdout.strip().splitlines()[-1].split())
    return {
        "images": train + test,
        "seconds": round(seconds, 1),
        "rendering_seconds_incl_process_start": round(rendering, 1),
        "images_per_s": rate(train + test, seconds),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000, help="images for ours and for the processes")
    parser.add_argument("--naive-images", type=int, default=100, help="images for the naive render")
    parser.add_argument("--processes", type=int, default=None, help="rendering processes (default: cores)")
    parser.add_argument("--build", type=int, default=5000, help="train images of a timed TFDS build (0: none)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for boxhead_speed.json / .md")
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    processes = args.processes or cores

    gt = Boxhead("boxhead1", workers=0)
    factors = gt.sample_factors(args.images, 0).astype(np.float64)

    scene, build_wall, _ = timed(boxhead_scene.Scene)
    scene.render(factors[:50])  # warm-up: shader compilation, first frame
    runs = [timed(scene.render, factors) for _ in range(REPEATS)]
    ours, ours_wall, _ = min(runs, key=lambda run: run[1])
    ours_cpu = min(run[2] for run in runs)
    slow, naive_wall, naive_cpu = timed(naive, factors[: args.naive_images])
    same = bool(np.array_equal(slow, ours[: args.naive_images]))
    top = profile(scene, factors[: min(2000, args.images)])
    split = breakdown(scene, factors)
    window = scene.window
    renderer_info = {
        "render_window": type(window).__name__,
        "opengl": " ".join(window.ReportCapabilities().split("OpenGL renderer string:")[1].split("\n")[0].split()),
    }
    scene.close()

    with Boxhead("boxhead1", workers=processes) as pooled:
        pooled.observations_from_factors(factors[: 256 * processes])  # start the processes
        parts = max(1, min(processes, args.images // 256))
        _, pool_wall, _ = timed(workers.render, factors, parts)
        _, one_wall, _ = timed(workers.render, factors, 1)

    build = tfds_build(args.build) if args.build else None
    results = {
        "machine": {
            "cores_available": cores,
            "cpu": platform.processor() or platform.machine(),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "python": sys.version.split()[0],
            **renderer_info,
            "LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"),
        },
        "images": args.images,
        "naive_images": args.naive_images,
        "build_train_images": args.build,
        "scene_build_seconds": round(build_wall, 3),
        "ours": {"images_per_s": rate(args.images, ours_wall), "images_per_cpu_s": rate(args.images, ours_cpu)},
        "naive": {"images_per_s": rate(args.naive_images, naive_wall), "images_per_cpu_s": rate(args.naive_images, naive_cpu)},
        "ratio_wall": round((args.images / ours_wall) / (args.naive_images / naive_wall), 1),
        "ratio_cpu": round((args.images / ours_cpu) / (args.naive_images / naive_cpu), 1),
        "naive_images_identical_to_ours": same,
        "one_render_process_images_per_s": rate(args.images, one_wall),
        f"{parts}_render_processes_images_per_s": rate(args.images, pool_wall),
        "tfds_build_default_processes": build,
        "cpu_ms_per_image_ours": round(ours_cpu / args.images * 1e3, 3),
        "cpu_ms_per_frame_breakdown": split,
        "profile_ours_top": top,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "boxhead_speed.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "boxhead_speed.md").write_text(markdown(results, parts))
    print(json.dumps({k: v for k, v in results.items() if k != "profile_ours_top"}, indent=2))
    return results


def markdown(r: dict, parts: int) -> str:
    m, split = r["machine"], r["cpu_ms_per_frame_breakdown"]
    lines = [
        "# Boxhead rendering speed",
        "",
        f"`python -m benchmarks.boxhead_speed --images {r['images']} --naive-images {r['naive_images']} "
        f"--build {r['build_train_images']}`; "
        f"{m['cores_available']} cores available (1-minute load {m['load_average_1min']} at the end), "
        f"{m['render_window']} on {m['opengl']}, LP_NUM_THREADS={m['LP_NUM_THREADS']}; "
        f"ours: best of {REPEATS} runs.",
        "",
        "| render | images / s (wall) | images / CPU s |",
        "|---|---:|---:|",
        f"| ours: one scene reused, one core | {r['ours']['images_per_s']} | {r['ours']['images_per_cpu_s']} |",
        f"| naive: scene rebuilt per image, one core | {r['naive']['images_per_s']} | {r['naive']['images_per_cpu_s']} |",
        f"| ours through 1 rendering process (IPC included) | {r['one_render_process_images_per_s']} | |",
        f"| ours through {parts} rendering processes | {r[f'{parts}_render_processes_images_per_s']} | |",
        "",
        "The rates through rendering processes include sending factors and images through pipes "
        "and grow only with idle cores (see the load above).",
        "",
        f"Ratio ours / naive: **{r['ratio_wall']}x** in wall time, {r['ratio_cpu']}x in CPU time. Building the scene once takes "
        f"{r['scene_build_seconds']} s. The naive images are identical to ours: {r['naive_images_identical_to_ours']}.",
        "",
        *(
            [
                f"A TFDS build of {b['images']} images (`boxhead1`, default processes) took {b['seconds']} s, "
                f"{b['images_per_s']} images/s, of which {b['rendering_seconds_incl_process_start']} s rendering "
                "(start of the rendering processes included); the rest is TFDS writing the examples "
                "(PNG encoding, serialisation, shuffling).",
                "",
            ]
            if (b := r["tfds_build_default_processes"])
            else []
        ),
        "Where the time of `ours` goes (CPU time, best of three): per image "
        f"{r['cpu_ms_per_image_ours']} ms in all; a frame in which nothing changed renders in "
        f"{split['render_only_nothing_changed']} ms, after a camera move in "
        f"{split['render_after_camera_move']} ms, after the seven colour uniforms changed in "
        f"{split['render_after_colour_uniforms_change']} ms; had the colours been set on the actors' "
        "vtkProperty (VTK's usual way, which rebuilds each actor's shader source on the next frame), in "
        f"{split['render_after_vtkproperty_colours_change']} ms. Profile (cProfile, own time):",
        "",
        "| function | calls | seconds | share |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| `{p['function']}` | {p['calls']} | {p['seconds']} | {p['share']:.1%} |" for p in r["profile_ours_top"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
