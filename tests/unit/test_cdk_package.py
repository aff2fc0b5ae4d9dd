"""``punctual.cdk`` without the ``cdk`` extra: its assets module works (the project's tests and
benchmarks build the Lambda assets with it), and a construct's import says what to install."""

from __future__ import annotations

import subprocess
import sys

# Python treats a None in sys.modules as a module that cannot be imported: as if the extra were absent.
WITHOUT_CDK = "import sys\nfor name in ('aws_cdk', 'constructs', 'cdk_nag'):\n    sys.modules[name] = None\n"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_CDK + code], capture_output=True, text=True, check=False, timeout=60
    )


def test_without_the_cdk_the_assets_module_imports() -> None:
    result = _run("import punctual.cdk.assets\nprint(punctual.cdk.assets.LAMBDA_PYTHON_VERSION)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3.13"


def test_without_the_cdk_a_construct_says_which_extra_to_install() -> None:
    result = _run("from punctual.cdk import Job")
    assert result.returncode == 1
    expected = "ImportError: punctual.cdk needs the AWS CDK libraries: pip install 'punctual-aws[cdk]'"
    assert expected in result.stderr
