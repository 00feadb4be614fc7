"""The Boxhead scene: geometry from Open3D, off-screen rendering with PyVista (VTK).

Cube, squares and camera follow the authors' scene (Chen et al. 2022, figure 1 and
appendix B.1). The floor is the plane z = 0; the cube spans x, y in [-1, 1] and z in
[0, 2] and is scaled by ``scale`` about the origin, so it grows from the floor. On
its +x face a 2x2 block of squares, together 0.86 of the face width (each square
0.86 units wide) and protruding 0.02 units, is coloured by the four micro hues:
``micro_hue1`` top left, ``micro_hue2`` top right, ``micro_hue3`` bottom left,
``micro_hue4`` bottom right, as seen at azimuth 0. The camera orbits the
point (0, 0, 2) at distance 12 and 1 degree of elevation; ``azimuth`` turns it about the
vertical axis (0: on the +x axis, facing the squares; positive: towards +y).

Chosen here (the sources do not give them): a back wall at x = -5 and side walls at
y = +/-7 sharing the wall hue, tall and long enough to fill every view; VTK's
default 30 degree view angle; one white directional light fixed in the room plus
ambient light (ambient 0.35 + diffuse 0.65, no specular), so that shading scales a
fully saturated colour without changing its hue; no anti-aliasing.

A :class:`Scene` is built once and reused: per image only colours (shader
uniforms), the cube's scale and the camera position change. Rendering needs an
OpenGL implementation; on a machine without a display (``DISPLAY`` unset) VTK's EGL
render window is selected, which Mesa's software rasteriser (llvmpipe) serves
without a GPU. Mesa's OpenGL and TensorFlow crash in one process, so
:class:`Scene` refuses to start where TensorFlow is imported; the dataset renders
in :mod:`hier_datasets.boxhead.workers` processes.
"""
from __future__ import annotations

import atexit
import gc
import math
import os
import sys

import numpy as np

if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
    # Without an X server, go straight to EGL instead of failing over from X with a warning.
    os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
# llvmpipe: 64x64 images are rasterised fastest in the calling thread (no worker threads).
os.environ.setdefault("LP_NUM_THREADS", "0")

import open3d as o3d  # noqa: E402
import pyvista as pv  # noqa: E402
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402
from vtkmodules.vtkCommonCore import vtkUnsignedCharArray  # noqa: E402

from hier_datasets.boxhead.constants import FACTOR_NAMES, MICRO, SIZE, hue_to_rgb  # noqa: E402

CUBE_HALF = 1.0
SQUARE = 0.86
SQUARE_DEPTH = 0.02
BACK_WALL_X, SIDE_WALL_Y, ROOM_FRONT_X, WALL_HEIGHT = -5.0, 7.0, 20.0, 14.0
CAMERA_DISTANCE, CAMERA_ELEVATION = 12.0, math.radians(1.0)
FOCAL_POINT = (0.0, 0.0, 2.0)
VIEW_ANGLE = 30.0
CLIPPING_RANGE = (0.5, 80.0)
LIGHT_POSITION = (5.0, 3.0, 10.0)
AMBIENT, DIFFUSE = 0.35, 0.65
#: the actors that carry a hue, in the order of their columns in :data:`_HUE_COLUMNS`
PAINTED = ("walls", "floor", "cube") + MICRO
_HUE_COLUMNS = [FACTOR_NAMES.index(n) for n in ("wall_hue", "floor_hue", "cube_hue") + MICRO]
_SCALE, _AZIMUTH = FACTOR_NAMES.index("scale"), FACTOR_NAMES.index("azimuth")
_SCALED = ("cube",) + MICRO
_COLOUR = "boxheadColour"


def _colour_uniform(actor):
    """Give ``actor`` its surface colour through a shader uniform; returns the uniforms to set it.

    Changing a vtkProperty's colour makes VTK rebuild the actor's shader source on
    the next frame, which costs more than the rendering of a 64x64 frame itself; a
    uniform is only uploaded. The fragment shader's ambient and diffuse colours
    become ``ambient * colour`` and ``diffuse * colour``, as for a property colour.
    """
    shader = actor.GetShaderProperty()
    shader.AddFragmentShaderReplacement(
        "//VTK::Color::Impl",
        True,
        "//VTK::Color::Impl\n"
        f"  ambientColor = ambientIntensity * {_COLOUR};\n"
        f"  diffuseColor = diffuseIntensity * {_COLOUR};\n",
        False,
    )
    uniforms = shader.GetFragmentCustomUniforms()
    uniforms.SetUniform3f(_COLOUR, [1.0, 1.0, 1.0])
    return uniforms


def _box(x0, x1, y0, y1, z0, z1) -> o3d.geometry.TriangleMesh:
    box = o3d.geometry.TriangleMesh.create_box(x1 - x0, y1 - y0, z1 - z0)
    return box.translate((x0, y0, z0))


def build_meshes() -> dict[str, o3d.geometry.TriangleMesh]:
    """Open3D meshes of the scene parts, in scene units, keyed by :data:`PAINTED` names."""
    c = CUBE_HALF
    meshes = {"cube": _box(-c, c, -c, c, 0.0, 2 * c)}
    # squares: columns y in [-s, 0] (left at azimuth 0) and [0, s]; rows z above / below the face centre
    corners = [(-SQUARE, c), (0.0, c), (-SQUARE, c - SQUARE), (0.0, c - SQUARE)]
    for name, (y0, z0) in zip(MICRO, corners):
        meshes[name] = _box(c - 0.01, c + SQUARE_DEPTH, y0, y0 + SQUARE, z0, z0 + SQUARE)
    meshes["floor"] = _box(BACK_WALL_X, ROOM_FRONT_X, -SIDE_WALL_Y, SIDE_WALL_Y, -0.1, 0.0)
    walls = _box(BACK_WALL_X - 0.1, BACK_WALL_X, -SIDE_WALL_Y, SIDE_WALL_Y, 0.0, WALL_HEIGHT)
    walls += _box(BACK_WALL_X, ROOM_FRONT_X, SIDE_WALL_Y, SIDE_WALL_Y + 0.1, 0.0, WALL_HEIGHT)
    walls += _box(BACK_WALL_X, ROOM_FRONT_X, -SIDE_WALL_Y - 0.1, -SIDE_WALL_Y, 0.0, WALL_HEIGHT)
    meshes["walls"] = walls
    return meshes


def to_polydata(mesh: o3d.geometry.TriangleMesh) -> pv.PolyData:
    """A PyVista surface with the mesh's vertices and triangles (no normals: flat shading)."""
    tri = np.asarray(mesh.triangles, dtype=np.int64)
    cells = np.hstack([np.full((len(tri), 1), 3), tri]).ravel()
    return pv.PolyData(np.asarray(mesh.vertices, dtype=np.float64), cells)


def camera_position(azimuth: float) -> tuple[float, float, float]:
    """Where the camera is for an azimuth in radians."""
    horizontal = CAMERA_DISTANCE * math.cos(CAMERA_ELEVATION)
    return (
        FOCAL_POINT[0] + horizontal * math.cos(azimuth),
        FOCAL_POINT[1] + horizontal * math.sin(azimuth),
        FOCAL_POINT[2] + CAMERA_DISTANCE * math.sin(CAMERA_ELEVATION),
    )


class Scene:
    """The room, the cube and its squares, built once; :meth:`render` draws factor rows."""

    def __init__(self, size: int = SIZE):
        if "tensorflow" in sys.modules:
            raise RuntimeError(
                "the Boxhead scene cannot render in a process that has imported TensorFlow (Mesa's OpenGL "
                "and TensorFlow crash together); render in separate processes: Boxhead(workers=1) or more"
            )
        theme = pv.themes.Theme()
        theme.multi_samples = 0
        theme.anti_aliasing = None
        theme.background = "black"
        self.size = size
        self.plotter = pv.Plotter(off_screen=True, window_size=(size, size), lighting="none", theme=theme)
        self.actors = {}
        for name, mesh in build_meshes().items():
            self.actors[name] = self.plotter.add_mesh(
                to_polydata(mesh), color="white", ambient=AMBIENT, diffuse=DIFFUSE, specular=0.0, reset_camera=False
            )
        light = pv.Light(position=LIGHT_POSITION, focal_point=(0, 0, 0), color="white", light_type="scene light")
        self.plotter.add_light(light)
        self._colours = [_colour_uniform(self.actors[name]) for name in PAINTED]
        self._scaled = [self.actors[name] for name in _SCALED]
        self.camera = self.plotter.renderer.GetActiveCamera()
        self.camera.SetFocalPoint(*FOCAL_POINT)
        self.camera.SetViewUp(0.0, 0.0, 1.0)
        self.camera.SetViewAngle(VIEW_ANGLE)
        self.window = self.plotter.ren_win
        self.window.SetMultiSamples(0)
        self._pixels = vtkUnsignedCharArray()

    def render(self, factors: np.ndarray) -> np.ndarray:
        """(n, size, size, 3) uint8 images of validated (n, 10) factor rows."""
        factors = np.asarray(factors, dtype=np.float64)
        colours = hue_to_rgb(factors[:, _HUE_COLUMNS]).tolist()
        out = np.empty((len(factors), self.size, self.size, 3), dtype=np.uint8)
        last = self.size - 1
        for i, (row, rgb) in enumerate(zip(factors.tolist(), colours)):
            for uniforms, colour in zip(self._colours, rgb):
                uniforms.SetUniform3f(_COLOUR, colour)
            s = row[_SCALE]
            for actor in self._scaled:
                actor.SetScale(s, s, s)
            self.camera.SetPosition(camera_position(row[_AZIMUTH]))
            self.camera.SetClippingRange(*CLIPPING_RANGE)
            self.window.Render()
            self.window.GetPixelData(0, 0, last, last, 0, self._pixels, 0)
            # OpenGL rows start at the bottom
            out[i] = vtk_to_numpy(self._pixels).reshape(self.size, self.size, 3)[::-1]
        return out

    def close(self) -> None:
        """Release the render window and the VTK objects now (not at interpreter shutdown)."""
        if self.plotter is None:
            return
        self.plotter.close()
        self.plotter.deep_clean()
        self.actors.clear()
        self._colours, self._scaled = [], []
        self.camera = self.window = self.plotter = None
        gc.collect()


_SCENE: Scene | None = None


def render(factors: np.ndarray) -> np.ndarray:
    """Render with this process's scene, built on first use."""
    global _SCENE
    if _SCENE is None:
        _SCENE = Scene()
        atexit.register(close)
    return _SCENE.render(factors)


def close() -> None:
    """Release this process's scene (before interpreter shutdown, which VTK objects dislike)."""
    global _SCENE
    if _SCENE is not None:
        _SCENE.close()
        _SCENE = None
