"""Lambda assets built without Docker: the code of ``punctual_functions/`` and a layer with its dependencies.

The functions run on arm64 (Graviton). Their third-party dependencies come from PyPI as wheels for
``manylinux2014_aarch64`` and the Lambda runtime's Python version, installed by the local pip with
``--platform``/``--only-binary``: no container, no compiler. The layer is rebuilt only when its pinned
requirements (or how it is built) change; the code is staged afresh on every synth, which is a copy.

Both ship **bytecode compiled by exactly the runtime's Python** (3.13): ``/var/task`` and ``/opt`` are
read-only, so without it every cold start compiles every module it imports, and bytecode is specific
to a Python minor version. The pycs are hash-based and unchecked (PEP 552): a zip does not keep mtimes
faithfully, so timestamp pycs could be judged stale, and checking the hash would read and hash each
source on import; the asset is immutable, so its pycs can never disagree with its sources.

A *twin* for this machine's architecture lets ``make test`` import every handler from the assets in
a fresh Python 3.13, and ``make bench`` time it, as Lambda would: the layer's pins as x86_64 wheels,
and, behind them on the path as on Lambda, the boto3, botocore and urllib3 1.26 the runtime ships
(``runtime-requirements.txt``), each compiled like the real layer.

A second layer, the API function's alone, carries ``exchange-calendars`` and pandas
(``exchange-requirements.txt``): the API expands an exchange's closed days when a calendar is written,
the dispatcher and the worker never import them, and their cold starts stay as they were. The API's
code and both layers come to about 152 MB unzipped (code 1.4, dependencies 26, exchange-calendars
with pandas and numpy 125), under Lambda's 250 MB (a test measures it).

Run ``python -m punctual.cdk.assets`` (``make infra-setup`` does) to build the layers before ``cdk synth``.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

import punctual_functions

# The functions' code: the ``punctual_functions`` package as installed beside this one (in the wheel, or a
# checkout's own tree in an editable install).
FUNCTIONS_DIR: Final = Path(punctual_functions.__file__).resolve().parent
# Where built layers live, overridden by this variable.
BUILD_DIR_ENV: Final = "PUNCTUAL_BUILD_DIR"


def default_build_dir(environ: Mapping[str, str] = os.environ, home: Path | None = None) -> Path:
    """``$PUNCTUAL_BUILD_DIR``; else, for a checkout of the project (an editable install: the
    ``punctual_functions`` package sits beside its ``pyproject.toml``), the checkout's ``build/lambda``;
    else the
    user's cache (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``punctual/lambda``), shared by every CDK
    app on the machine: a layer is built once per inputs digest, whichever app asks first."""
    if environ.get(BUILD_DIR_ENV):
        return Path(environ[BUILD_DIR_ENV])
    checkout = FUNCTIONS_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "infra").is_dir():
        return checkout / "build" / "lambda"
    cache = (
        Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else (home or Path.home()) / ".cache"
    )
    return cache / "punctual" / "lambda"


BUILD_DIR: Final = default_build_dir()
LAYER_REQUIREMENTS: Final = Path(__file__).resolve().parent / "lambda-requirements.txt"
# The API function's second layer: exchange-calendars with pandas and numpy (about 100 MB unzipped).
EXCHANGE_REQUIREMENTS: Final = Path(__file__).resolve().parent / "exchange-requirements.txt"
# Lambda's limit on a function's code and layers, unzipped, together.
UNZIPPED_LIMIT_BYTES: Final = 250 * 1024 * 1024
# What the Lambda runtime itself provides (boto3 and its dependencies), for the twin only.
RUNTIME_REQUIREMENTS: Final = Path(__file__).resolve().parent / "runtime-requirements.txt"

# The Lambda runtime and architecture the wheels are chosen for; functions.py uses the same values.
LAMBDA_PYTHON_VERSION: Final = "3.13"
WHEEL_PLATFORM: Final = "manylinux2014_aarch64"
# The twin layer: the same pins for the machine that runs the tests and benchmarks.
TWIN_WHEEL_PLATFORM: Final = "manylinux2014_x86_64"
# Overrides where the build finds the runtime's interpreter.
PYTHON_ENV: Final = "PUNCTUAL_LAMBDA_PYTHON"


class AssetError(RuntimeError):
    """An asset is missing or could not be built."""


@lru_cache(maxsize=1)
def runtime_python() -> str:
    """The interpreter that compiles the assets: exactly the Lambda runtime's Python version."""
    return find_runtime_python(os.environ, Path.home())


def find_runtime_python(environ: Mapping[str, str], home: Path) -> str:
    """``$PUNCTUAL_LAMBDA_PYTHON`` (which must be that version), else ``python3.13`` on the PATH,
    else one installed by pyenv. Each candidate is run: a pyenv shim on the PATH may exist and fail."""
    override = environ.get(PYTHON_ENV)
    if override:
        found = _python_version(override)
        if found != LAMBDA_PYTHON_VERSION:
            raise AssetError(
                f"{PYTHON_ENV}={override} is {'Python ' + found if found else 'not a working Python'}, "
                f"but the assets must be compiled by Python {LAMBDA_PYTHON_VERSION}, the functions' runtime"
            )
        return override
    candidates = [shutil.which(f"python{LAMBDA_PYTHON_VERSION}", path=environ.get("PATH", "")) or ""]
    if sys.version_info[:2] == tuple(map(int, LAMBDA_PYTHON_VERSION.split("."))):
        candidates.append(sys.executable)  # the synth's own interpreter, when it is that version
    pyenv_root = environ.get("PYENV_ROOT") or str(home / ".pyenv")
    pattern = f"{pyenv_root}/versions/{LAMBDA_PYTHON_VERSION}*/bin/python{LAMBDA_PYTHON_VERSION}"
    candidates += sorted(glob.glob(pattern), reverse=True)
    for candidate in filter(None, candidates):
        if _python_version(candidate) == LAMBDA_PYTHON_VERSION:
            return candidate
    raise AssetError(
        f"the Lambda assets are compiled by Python {LAMBDA_PYTHON_VERSION}, the functions' runtime, and none "
        f"was found: install it (e.g. `pyenv install {LAMBDA_PYTHON_VERSION}`, or your system's "
        f"python{LAMBDA_PYTHON_VERSION} package) or point {PYTHON_ENV} at it"
    )


def _python_version(executable: str) -> str | None:
    """``major.minor`` of a Python executable, or None if it does not run as one."""
    try:
        probe = subprocess.run(
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return probe.stdout.strip() if probe.returncode == 0 else None


def compile_bytecode(directory: Path, deployed_at: str) -> None:
    """Compile every module under ``directory`` for the runtime, as unchecked hash-based pycs.

    Tracebacks name the files where Lambda puts them (``deployed_at``), which also keeps the pycs
    the same from one build directory to the next.
    """
    result = subprocess.run(
        [
            runtime_python(),
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            "-d",
            deployed_at,
            str(directory),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise AssetError(f"compiling {directory} failed:\n{result.stdout}\n{result.stderr}")


def stage_code(destination: Path | None = None) -> Path:
    """Copy the ``punctual_functions`` package into a clean asset directory, with its bytecode.

    By default a fresh temporary directory, removed when the process exits (synthesis has copied it
    into the cloud assembly by then): two synths running at once never see each other's copy.
    """
    if destination is None:
        destination = Path(tempfile.mkdtemp(prefix="punctual-code-"))
        atexit.register(shutil.rmtree, destination, ignore_errors=True)
    elif destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(
        FUNCTIONS_DIR,
        destination / "punctual_functions",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"),
        dirs_exist_ok=True,
    )
    compile_bytecode(destination, "/var/task")
    return destination


def _layer_inputs_digest(requirements: tuple[Path, ...], platform: str) -> str:
    digest = hashlib.sha256()
    for path in requirements:
        digest.update(path.read_bytes())
    digest.update(f"{LAMBDA_PYTHON_VERSION}|{platform}".encode())
    digest.update(Path(__file__).read_bytes())  # how the layer is built is an input too
    return digest.hexdigest()[:16]


def layer_dir(build_dir: Path = BUILD_DIR, requirements: Path = LAYER_REQUIREMENTS) -> Path:
    """Where the layer for these inputs lives. A directory per inputs digest, created whole by a
    rename, is never changed afterwards: a synth reading it cannot race a rebuild."""
    return build_dir / f"layer-{_layer_inputs_digest((requirements,), WHEEL_PLATFORM)}"


def exchange_layer_dir(build_dir: Path = BUILD_DIR) -> Path:
    return build_dir / f"exchange-layer-{_layer_inputs_digest((EXCHANGE_REQUIREMENTS,), WHEEL_PLATFORM)}"


def exchange_twin_dir(build_dir: Path = BUILD_DIR) -> Path:
    digest = _layer_inputs_digest((EXCHANGE_REQUIREMENTS,), TWIN_WHEEL_PLATFORM)
    return build_dir / f"twin-exchange-layer-{digest}"


def twin_dirs(build_dir: Path = BUILD_DIR) -> tuple[Path, Path]:
    """Where the twin lives: (the layer's pins, the runtime's SDK), each as this machine's wheels."""
    return (
        build_dir / f"twin-layer-{_layer_inputs_digest((LAYER_REQUIREMENTS,), TWIN_WHEEL_PLATFORM)}",
        build_dir / f"twin-runtime-{_layer_inputs_digest((RUNTIME_REQUIREMENTS,), TWIN_WHEEL_PLATFORM)}",
    )


def build_dependency_layer(build_dir: Path = BUILD_DIR, requirements: Path = LAYER_REQUIREMENTS) -> Path:
    """Install the pinned requirements as arm64 wheels under ``<layer>/python`` (a Lambda layer).

    Returns at once when the layer for the same inputs exists.
    """
    return _build_layer(layer_dir(build_dir, requirements), (requirements,), WHEEL_PLATFORM)


def build_exchange_layer(build_dir: Path = BUILD_DIR) -> Path:
    """The API's exchange-calendars layer, as arm64 wheels (at once when built already)."""
    return _build_layer(exchange_layer_dir(build_dir), (EXCHANGE_REQUIREMENTS,), WHEEL_PLATFORM)


def build_exchange_twin(build_dir: Path = BUILD_DIR) -> Path:
    """The exchange layer's twin for this machine: what the API function has after ``build_twin``."""
    return (
        _build_layer(exchange_twin_dir(build_dir), (EXCHANGE_REQUIREMENTS,), TWIN_WHEEL_PLATFORM) / "python"
    )


def build_twin(build_dir: Path = BUILD_DIR) -> list[Path]:
    """The twin of a function's packages for this machine, in Lambda's order on ``sys.path`` after the
    code: the layer (``/opt/python``), then the runtime's own boto3 and its dependencies."""
    layer, runtime = twin_dirs(build_dir)
    return [
        _build_layer(layer, (LAYER_REQUIREMENTS,), TWIN_WHEEL_PLATFORM) / "python",
        _build_layer(runtime, (RUNTIME_REQUIREMENTS,), TWIN_WHEEL_PLATFORM) / "python",
    ]


def _build_layer(target: Path, requirements: tuple[Path, ...], platform: str) -> Path:
    if target.is_dir():
        return target
    build_dir = target.parent
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
            platform,
            "--implementation",
            "cp",
            "--python-version",
            LAMBDA_PYTHON_VERSION,
            "--target",
            str(staging / "python"),
        ]
        for path in requirements:
            command += ["--requirement", str(path)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise AssetError(f"building the dependency layer failed:\n{result.stdout}\n{result.stderr}")
        _drop_console_scripts(staging / "python")
        compile_bytecode(staging / "python", "/opt/python")
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
            "run `make infra-setup` (or `python -m punctual.cdk.assets`) first"
        )
    return target


def require_exchange_layer(build_dir: Path = BUILD_DIR) -> Path:
    """The built exchange layer, or a clear error saying how to build it."""
    target = exchange_layer_dir(build_dir)
    if not target.is_dir():
        raise AssetError(
            f"the API's exchange-calendars layer {target} is missing or out of date: "
            "run `make infra-setup` (or `python -m punctual.cdk.assets`) first"
        )
    return target


@dataclass(frozen=True)
class LambdaAssets:
    """What the functions deploy: their code (``punctual_functions/``), the dependency layer, and the API's
    exchange-calendars layer, each a directory ready for ``lambda.Code.from_asset``."""

    code_dir: Path
    layer_dir: Path
    exchange_layer_dir: Path

    @classmethod
    def build(cls, build_dir: Path | None = None) -> LambdaAssets:
        """The code staged afresh, and each layer built into ``build_dir`` (``default_build_dir()``)
        unless it is there already: the first synth on a machine downloads the pinned wheels from PyPI
        (about 150 MB, a minute or two), every later one finds them."""
        directory = build_dir or BUILD_DIR
        return cls(
            code_dir=stage_code(),
            layer_dir=build_dependency_layer(directory),
            exchange_layer_dir=build_exchange_layer(directory),
        )

    @classmethod
    def prebuilt(cls, build_dir: Path | None = None) -> LambdaAssets:
        """The code staged afresh and layers built beforehand (``python -m punctual.cdk.assets``):
        ``AssetError`` saying how, if one is missing. Synthesis then downloads nothing."""
        directory = build_dir or BUILD_DIR
        return cls(
            code_dir=stage_code(),
            layer_dir=require_dependency_layer(directory),
            exchange_layer_dir=require_exchange_layer(directory),
        )


def tree_size(root: Path) -> int:
    """Bytes of the files under ``root``: what Lambda counts of an asset, unzipped."""
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def main() -> None:
    layer = build_dependency_layer()
    print(f"dependency layer ready: {layer}")
    exchange = build_exchange_layer()
    print(f"the API's exchange-calendars layer ready: {exchange} ({tree_size(exchange) / 2**20:.0f} MB)")
    twin = build_twin()
    print(f"twin of the layer and the runtime's SDK (for tests and benchmarks) ready: {twin}")
    print(f"twin of the exchange layer (for tests) ready: {build_exchange_twin()}")


if __name__ == "__main__":
    main()
