"""Lambda assets built without Docker: the code of ``functions/`` and a layer with its dependencies.

The functions run on arm64 (Graviton). Their third-party dependencies come from PyPI as wheels for
``manylinux2014_aarch64`` and the Lambda runtime's Python version, installed by the local pip with
``--platform``/``--only-binary``: no container, no compiler. The layer is rebuilt only when its pinned
requirements (or how it is built) change; the code is staged afresh on every synth, which is a copy.

Run ``python -m infra.assets`` (``make infra-setup`` does) to build the layer before ``cdk synth``.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
BUILD_DIR: Final = REPO_ROOT / "build" / "lambda"
LAYER_REQUIREMENTS: Final = Path(__file__).resolve().parent / "lambda-requirements.txt"

# The Lambda runtime and architecture the wheels are chosen for; functions.py uses the same values.
LAMBDA_PYTHON_VERSION: Final = "3.14"
WHEEL_PLATFORM: Final = "manylinux2014_aarch64"


class AssetError(RuntimeError):
    """An asset is missing or could not be built."""


def stage_code(destination: Path | None = None) -> Path:
    """Copy the ``functions`` package (sources only) into a clean asset directory.

    By default a fresh temporary directory, removed when the process exits (synthesis has copied it
    into the cloud assembly by then): two synths running at once never see each other's copy.
    """
    if destination is None:
        destination = Path(tempfile.mkdtemp(prefix="punctual-code-"))
        atexit.register(shutil.rmtree, destination, ignore_errors=True)
    elif destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(
        REPO_ROOT / "functions",
        destination / "functions",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"),
        dirs_exist_ok=True,
    )
    return destination


def _layer_inputs_digest(requirements: Path) -> str:
    digest = hashlib.sha256()
    digest.update(requirements.read_bytes())
    digest.update(f"{LAMBDA_PYTHON_VERSION}|{WHEEL_PLATFORM}".encode())
    digest.update(Path(__file__).read_bytes())  # how the layer is built is an input too
    return digest.hexdigest()[:16]


def layer_dir(build_dir: Path = BUILD_DIR, requirements: Path = LAYER_REQUIREMENTS) -> Path:
    """Where the layer for these inputs lives. A directory per inputs digest, created whole by a
    rename, is never changed afterwards: a synth reading it cannot race a rebuild."""
    return build_dir / f"layer-{_layer_inputs_digest(requirements)}"


def build_dependency_layer(build_dir: Path = BUILD_DIR, requirements: Path = LAYER_REQUIREMENTS) -> Path:
    """Install the pinned requirements as arm64 wheels under ``<layer>/python`` (a Lambda layer).

    Returns at once when the layer for the same inputs exists.
    """
    target = layer_dir(build_dir, requirements)
    if target.is_dir():
        return target
    build_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.partial-", dir=build_dir))
    try:
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
        staging.chmod(0o755)  # mkdtemp made it private; the zip keeps the mode
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # not another builder that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _drop_console_scripts(packages: Path) -> None:
    """Remove pip's bin/ and its RECORD lines: a layer needs only the packages, and the scripts'
    shebangs name this machine's interpreter, which would make the asset differ from one machine to
    the next."""
    shutil.rmtree(packages / "bin", ignore_errors=True)
    for record in packages.glob("*.dist-info/RECORD"):
        lines = record.read_text().splitlines(keepends=True)
        record.write_text("".join(line for line in lines if not line.startswith("../../bin/")))


def require_dependency_layer(build_dir: Path = BUILD_DIR) -> Path:
    """The built layer, or a clear error saying how to build it (synth never downloads anything)."""
    target = layer_dir(build_dir)
    if not target.is_dir():
        raise AssetError(
            f"the Lambda dependency layer {target} is missing or out of date: "
            "run `make infra-setup` (or `python -m infra.assets`) first"
        )
    return target


def main() -> None:
    layer = build_dependency_layer()
    print(f"dependency layer ready: {layer}")


if __name__ == "__main__":
    main()
