"""Lambda assets built without Docker: the code of ``functions/`` and a layer with its dependencies.

The functions run on arm64 (Graviton). Their third-party dependencies come from PyPI as wheels for
``manylinux2014_aarch64`` and the Lambda runtime's Python version, installed by the local pip with
``--platform``/``--only-binary``: no container, no compiler. The layer is rebuilt only when its pinned
requirements (or the target platform) change; the code is restaged on every synth, which is a copy.

Run ``python -m infra.assets`` (``make infra-setup`` does) to build the layer before ``cdk synth``.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
BUILD_DIR: Final = REPO_ROOT / "build" / "lambda"
CODE_DIR: Final = BUILD_DIR / "code"
LAYER_DIR: Final = BUILD_DIR / "layer"
LAYER_REQUIREMENTS: Final = Path(__file__).resolve().parent / "lambda-requirements.txt"

# The Lambda runtime and architecture the wheels are chosen for; functions.py uses the same values.
LAMBDA_PYTHON_VERSION: Final = "3.14"
WHEEL_PLATFORM: Final = "manylinux2014_aarch64"


class AssetError(RuntimeError):
    """An asset is missing or could not be built."""


def stage_code(destination: Path = CODE_DIR) -> Path:
    """Copy the ``functions`` package (sources only) into a clean asset directory."""
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(
        REPO_ROOT / "functions",
        destination / "functions",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"),
    )
    return destination


def _layer_inputs_digest(requirements: Path) -> str:
    digest = hashlib.sha256()
    digest.update(requirements.read_bytes())
    digest.update(f"{LAMBDA_PYTHON_VERSION}|{WHEEL_PLATFORM}".encode())
    digest.update(Path(__file__).read_bytes())  # how the layer is built is an input too
    return digest.hexdigest()


def _stamp(layer_dir: Path) -> Path:
    # Beside the layer, not in it: everything inside the directory is uploaded as the asset.
    return layer_dir.with_name(layer_dir.name + ".sha256")


def layer_is_current(layer_dir: Path = LAYER_DIR, requirements: Path = LAYER_REQUIREMENTS) -> bool:
    stamp = _stamp(layer_dir)
    return (
        layer_dir.is_dir()
        and stamp.is_file()
        and stamp.read_text().strip() == _layer_inputs_digest(requirements)
    )


def build_dependency_layer(
    layer_dir: Path = LAYER_DIR, requirements: Path = LAYER_REQUIREMENTS, *, force: bool = False
) -> Path:
    """Install the pinned requirements as arm64 wheels under ``<layer_dir>/python`` (a Lambda layer).

    Returns at once when the layer was already built from the same inputs.
    """
    if not force and layer_is_current(layer_dir, requirements):
        return layer_dir
    staging = layer_dir.with_name(layer_dir.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",  # bytecode compiled here would be for this interpreter, not the runtime's
        "--no-deps",  # the requirements file pins every dependency
        "--only-binary=:all:",
        "--platform",
        WHEEL_PLATFORM,
        "--implementation",
        "cp",
        "--python-version",
        LAMBDA_PYTHON_VERSION,
        "--target",
        str(staging / "python"),
        "--requirement",
        str(requirements),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise AssetError(f"building the dependency layer failed:\n{result.stdout}\n{result.stderr}")
    _drop_console_scripts(staging / "python")
    _stamp(layer_dir).unlink(missing_ok=True)
    if layer_dir.exists():
        shutil.rmtree(layer_dir)
    staging.rename(layer_dir)
    _stamp(layer_dir).write_text(_layer_inputs_digest(requirements) + "\n")
    return layer_dir


def _drop_console_scripts(packages: Path) -> None:
    """Remove pip's bin/ and its RECORD lines: a layer needs only the packages, and the scripts'
    shebangs name this machine's interpreter, which would make the asset differ from one machine to
    the next."""
    shutil.rmtree(packages / "bin", ignore_errors=True)
    for record in packages.glob("*.dist-info/RECORD"):
        lines = record.read_text().splitlines(keepends=True)
        record.write_text("".join(line for line in lines if not line.startswith("../../bin/")))


def require_dependency_layer(layer_dir: Path = LAYER_DIR) -> Path:
    """The built layer, or a clear error saying how to build it (synth never downloads anything)."""
    if not layer_is_current(layer_dir):
        raise AssetError(
            f"the Lambda dependency layer in {layer_dir} is missing or out of date: "
            "run `make infra-setup` (or `python -m infra.assets`) first"
        )
    return layer_dir


def main() -> None:
    layer = build_dependency_layer()
    print(f"dependency layer ready: {layer}")


if __name__ == "__main__":
    main()
