"""Shared fixtures: the repository, the `nanopu` command (the API's results
are compared with it) and the guest programs."""

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK = REPO / "sdk" / "build"


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `nanopu` binary (NANOPU_BIN, else target/release/nanopu, built if missing)."""
    path = Path(os.environ.get("NANOPU_BIN", REPO / "target" / "release" / "nanopu"))
    if not path.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "nanopu"], cwd=REPO, check=True)
    return path


@pytest.fixture(scope="session", autouse=True)
def programs():
    if not (SDK / "loopback.elf").exists():
        pytest.fail("the guest programs are missing: run `make -C sdk` first")


def run_cli(cli, *args, cwd=REPO):
    """Runs the command; returns (exit status, stdout, stderr)."""
    p = subprocess.run([str(cli), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def cli_error(cli, *args) -> str:
    """The message of the command's `error:` line (it must fail with 125)."""
    code, _, err = run_cli(cli, *args)
    assert code == 125, err
    line = next(l for l in err.splitlines() if l.startswith("error: "))
    return err[err.index(line) + len("error: "):].split("\nhint:")[0].rstrip("\n")


def stats_json(path: Path) -> dict:
    return json.loads(path.read_text())
