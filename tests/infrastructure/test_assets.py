"""The Lambda assets as a deployment ships them: code and layer, with bytecode for the runtime.

Each handler is imported in a fresh interpreter of the runtime's Python version, isolated, with
nothing on its path but, in Lambda's order, the staged code, the twin of the layer (the same pins,
built for this machine) and the SDK the runtime ships (boto3, botocore and the urllib3 1.26 they may
come with: without the layer's urllib3 pin the api and the worker fail here), and it must run from
the shipped bytecode alone.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from punctual.cdk.assets import (
    EXCHANGE_REQUIREMENTS,
    FUNCTIONS_DIR,
    LAMBDA_PYTHON_VERSION,
    LAYER_REQUIREMENTS,
    AssetError,
    build_exchange_twin,
    build_twin,
    find_runtime_python,
    require_dependency_layer,
    require_exchange_layer,
    runtime_python,
    stage_code,
)
from punctual.cdk.config import DeploymentConfig

# The jobs' custom resource handler runs with the dependency layer alone, as the dispatcher and the worker do.
HANDLERS = (
    "punctual_functions.api.handler",
    "punctual_functions.dispatcher.handler",
    "punctual_functions.worker.handler",
    "punctual_functions.cfn.handler",
)
# What the Lambda runtime itself provides; everything else the functions import must be in the layer.
RUNTIME_PROVIDED = {"boto3", "botocore"}
PYC_TAG = f"cpython-{LAMBDA_PYTHON_VERSION.replace('.', '')}"

PROBE = """
import json, sys
sys.path[:0] = {paths!r}
import {module}
shipped = tuple({paths!r})
loaded = []
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None) or ""
    if path.startswith(shipped):
        loaded.append([name, path, getattr(module, "__cached__", None)])
print(json.dumps({{"version": list(sys.version_info[:2]), "path": sys.path, "loaded": loaded}}))
"""


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stage_code(tmp_path_factory.mktemp("asset") / "code")


@pytest.fixture(scope="module")
def twin() -> list[Path]:
    """The layer's packages, then the runtime's SDK (with its urllib3 1.26), in Lambda's order."""
    return build_twin()


def _pyc_is_unchecked_hash(pyc: Path) -> bool:
    flags = int.from_bytes(pyc.read_bytes()[4:8], "little")
    return flags == 0b01  # PEP 552: hash-based, source not checked


def _missing_bytecode(root: Path) -> list[str]:
    missing = []
    for source in root.rglob("*.py"):
        pyc = source.parent / "__pycache__" / f"{source.stem}.{PYC_TAG}.pyc"
        if not pyc.is_file() or not _pyc_is_unchecked_hash(pyc):
            missing.append(str(source.relative_to(root)))
    return missing


@pytest.mark.parametrize("module", HANDLERS)
def test_given_the_built_assets_when_a_fresh_runtime_python_imports_a_handler_then_it_runs_from_bytecode(
    code: Path, twin: list[Path], module: str
) -> None:
    settings = DeploymentConfig().runtime_settings(
        table_name="punctual-dev", queue_url="https://sqs.eu-west-1.amazonaws.com/123456789012/work"
    )
    environment = {
        **settings.to_env(),
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "POWERTOOLS_SERVICE_NAME": "punctual",
    }
    paths = [str(code), *map(str, twin)]
    # -I: isolated, -S: no site-packages, -B: write no bytecode (the deployment package is read-only).
    result = subprocess.run(
        [runtime_python(), "-I", "-S", "-B", "-c", PROBE.format(paths=paths, module=module)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert result.returncode == 0, f"{module} does not import from the assets:\n{result.stderr[-3000:]}"
    report = json.loads(result.stdout)
    assert report["version"] == [int(part) for part in LAMBDA_PYTHON_VERSION.split(".")]
    outside = [p for p in report["path"] if p not in paths and "site-packages" in p]
    assert outside == [], f"something besides the assets was importable: {outside}"
    without = [
        name
        for name, path, cached in report["loaded"]
        if path.endswith(".py") and (not cached or not Path(cached).is_file())
    ]
    assert without == [], f"modules compiled on import (no shipped bytecode): {without[:10]}"


def test_given_the_staged_code_and_the_layer_then_every_module_has_unchecked_hash_bytecode_for_the_runtime(
    code: Path,
) -> None:
    layer = require_dependency_layer() / "python"
    for root in (code, layer, require_exchange_layer() / "python"):
        missing = _missing_bytecode(root)
        assert missing == [], f"{root}: no {PYC_TAG} hash-based bytecode for {missing[:10]}"


def test_given_the_functions_imports_then_every_third_party_package_is_pinned_in_the_layer() -> None:
    # e.g. targets.py's urllib3: the runtime's botocore may come with an older one than it needs.
    imported: set[str] = set()
    for source in FUNCTIONS_DIR.rglob("*.py"):
        imported |= _runtime_imports(ast.parse(source.read_text()))
    third_party = {
        name for name in imported if name not in sys.stdlib_module_names and name != "punctual_functions"
    }
    distributions = metadata.packages_distributions()
    pins = {
        line.split("==")[0].strip().lower().replace("_", "-")
        for requirements in (LAYER_REQUIREMENTS, EXCHANGE_REQUIREMENTS)  # the API's own layer too
        for line in requirements.read_text().splitlines()
        if "==" in line and not line.lstrip().startswith("#")
    }
    unpinned = {
        name: dist
        for name in third_party
        for dist in distributions.get(name, [name])
        if dist.lower().replace("_", "-") not in pins and dist.lower() not in RUNTIME_PROVIDED
    }
    assert unpinned == {}, (
        f"imported by punctual_functions/ but neither in the layer nor the runtime: {unpinned}"
    )


def _runtime_imports(tree: ast.AST) -> set[str]:
    """Top-level packages a module imports when it runs (not those under ``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            found |= _runtime_imports(ast.Module(body=node.orelse, type_ignores=[]))
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        found |= _runtime_imports(node)
    return found


EXPAND = """
import json, sys
sys.path[:0] = {paths!r}
from datetime import date
from punctual_functions.api.exchanges import closed_days
closed, until = closed_days(["XNYS"], {{1, 2, 3, 4, 5}}, date(2026, 11, 22))
print(json.dumps({{"thanksgiving": date(2026, 11, 26) in closed, "until": until.isoformat()}}))
"""


def test_given_the_api_with_its_exchange_layer_when_a_calendar_names_an_exchange_then_it_is_expanded(
    code: Path, twin: list[Path]
) -> None:
    # The API function's packages in Lambda's order (code, dependencies layer, exchange layer, SDK),
    # in the runtime's Python: exchange-calendars and pandas import and expand NYSE's closed days.
    paths = [str(code), str(twin[0]), str(build_exchange_twin()), *map(str, twin[1:])]
    result = subprocess.run(
        [runtime_python(), "-I", "-S", "-B", "-c", EXPAND.format(paths=paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == {"thanksgiving": True, "until": "2029-11-22"}


def test_given_the_code_asset_when_it_is_imported_module_by_module_then_every_module_loads(
    code: Path, twin: list[Path]
) -> None:
    # Modules only some paths import (the target executors, the OpenAPI document) must load too.
    modules = sorted(
        ".".join(path.relative_to(code).with_suffix("").parts).removesuffix(".__init__")
        for path in (code / "punctual_functions").rglob("*.py")
    )
    paths = [str(code), *map(str, twin)]
    source = (
        "import importlib, sys\nsys.path[:0] = {paths!r}\n"
        "for name in {modules!r}:\n    importlib.import_module(name)\n"
    )
    settings = DeploymentConfig().runtime_settings(queue_url="https://sqs.eu-west-1.amazonaws.com/1/work")
    result = subprocess.run(
        [runtime_python(), "-I", "-S", "-B", "-c", source.format(paths=paths, modules=modules)],
        capture_output=True,
        text=True,
        env={**settings.to_env(), "AWS_REGION": "eu-west-1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_given_the_code_staged_twice_then_the_assets_are_the_same_bytes(tmp_path: Path) -> None:
    # Bytecode names files as Lambda mounts them, not by the build directory: an unchanged function
    # keeps its asset hash, so cdk deploy does not update it.
    first, second = stage_code(tmp_path / "one"), stage_code(tmp_path / "two")
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    differing = [str(f) for f in files if (first / f).read_bytes() != (second / f).read_bytes()]
    assert differing == []


def test_given_an_override_that_is_not_python_3_13_when_searched_then_synth_says_so(tmp_path: Path) -> None:
    with pytest.raises(AssetError, match="PUNCTUAL_LAMBDA_PYTHON"):
        find_runtime_python({"PUNCTUAL_LAMBDA_PYTHON": sys.executable}, tmp_path)  # this is 3.11
    with pytest.raises(AssetError, match="not a working Python"):
        find_runtime_python({"PUNCTUAL_LAMBDA_PYTHON": str(tmp_path / "missing")}, tmp_path)


def test_given_no_python_3_13_anywhere_when_searched_then_synth_says_what_to_install(tmp_path: Path) -> None:
    shim = tmp_path / "bin" / f"python{LAMBDA_PYTHON_VERSION}"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\nexit 127\n")  # a pyenv shim for a version that is not installed
    shim.chmod(0o755)
    with pytest.raises(AssetError, match="pyenv install"):
        find_runtime_python({"PATH": str(shim.parent), "PYENV_ROOT": str(tmp_path / "pyenv")}, tmp_path)
    assert find_runtime_python({"PATH": str(shim.parent)}, Path.home()) == runtime_python()
