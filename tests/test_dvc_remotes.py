"""DVC remotes: push, wipe the cache and the outputs, pull, byte-identical files.

A tiny temporary DVC repo (one `probes generate` stage and one `dvc add`-ed binary file) is pushed to
(a) a local directory remote and (b) an S3 remote served on loopback by moto's S3-compatible server, with
fake credentials. Nothing leaves 127.0.0.1: the endpoint is the loopback server, proxies are bypassed, the
instance-metadata lookup, DVC's analytics and its update check are off, and no AWS config file is read.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import dvc_env

BIN = Path(sys.executable).parent
BUCKET = "probekit-dvc"
FAKE = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}

pytestmark = pytest.mark.slow   # a DVC repo, `dvc repro`, an S3 server: the slow lane

DVC_YAML = """\
stages:
  generate-age_comparison:
    cmd: probes generate age_comparison --out data/probes/age_comparison
    params:
    - age_comparison
    outs:
    - data/probes/age_comparison
"""
PARAMS_YAML = """\
age_comparison:
  seed: 13
  mode: sample
  size: {train: 12, dev: 9}
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "DVC_")) and k.lower() not in {"http_proxy", "https_proxy", "all_proxy"}}
    env.update(FAKE, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
               AWS_EC2_METADATA_DISABLED="true", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
               AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"))
    env.pop("PROBES_MIRROR", None)
    return dvc_env(env)   # no analytics, no update check, no user/system DVC config, a site cache of the session


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def digests(root: Path, outputs: list[str]) -> dict[str, str]:
    """sha256 of every file under the outputs, keyed by path relative to the repo."""
    found = {}
    for out in outputs:
        path = root / out
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            found[file.relative_to(root).as_posix()] = hashlib.sha256(file.read_bytes()).hexdigest()
    return found


@pytest.fixture
def repo(tmp_path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "repo"
    root.mkdir()
    env = _env(tmp_path)
    run(["git", "init", "-q"], root, env)
    run(["dvc", "init", "-q"], root, env)
    (root / "dvc.yaml").write_text(DVC_YAML)
    (root / "params.yaml").write_text(PARAMS_YAML)
    blob = root / "raw" / "blob.bin"   # binary data, tracked with `dvc add`
    blob.parent.mkdir()
    blob.write_bytes(random.Random(0).randbytes(200_000))
    run(["dvc", "add", "raw/blob.bin"], root, env)
    run(["dvc", "repro"], root, env)
    return root, env


@pytest.fixture(scope="module")
def s3_endpoint():
    """moto's S3-compatible server on 127.0.0.1, a free port picked by the OS; stopped after the tests."""
    import boto3
    import dvc_s3  # noqa: F401  (the remote's plugin; the dev extra declares it)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        assert host == "127.0.0.1"
        url = f"http://127.0.0.1:{port}"
        client = boto3.client("s3", endpoint_url=url, aws_access_key_id=FAKE["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=FAKE["AWS_SECRET_ACCESS_KEY"],
                              region_name=FAKE["AWS_DEFAULT_REGION"])
        client.create_bucket(Bucket=BUCKET)
        yield url, client
    finally:
        server.stop()


OUTPUTS = ["data/probes/age_comparison", "raw/blob.bin"]


def _round_trip(root: Path, env: dict[str, str]) -> None:
    before = digests(root, OUTPUTS)
    assert len(before) == 7 * 4 + 2   # 7 variants x {train,dev}.jsonl, meta.json, README.md; the marker; the blob

    pushed = run(["dvc", "push"], root, env)
    assert "31 files pushed" in pushed, pushed   # 30 files + the folder's .dir listing
    assert "are in sync" in run(["dvc", "status", "-c"], root, env)

    shutil.rmtree(root / ".dvc" / "cache")
    for out in OUTPUTS:
        path = root / out
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert digests(root, OUTPUTS) == {}

    pulled = run(["dvc", "pull"], root, env)
    assert "files fetched" in pulled, pulled
    assert digests(root, OUTPUTS) == before
    assert "Data and pipelines are up to date." in run(["dvc", "status"], root, env)
    assert "are in sync" in run(["dvc", "status", "-c"], root, env)


def test_local_directory_remote_round_trip(repo, tmp_path):
    root, env = repo
    remote = tmp_path / "remote"
    remote.mkdir()
    run(["dvc", "remote", "add", "-d", "storage", str(remote)], root, env)
    _round_trip(root, env)
    assert len([p for p in remote.rglob("*") if p.is_file()]) == 31


def test_s3_remote_round_trip_on_loopback(repo, s3_endpoint):
    root, env = repo
    url, client = s3_endpoint
    run(["dvc", "remote", "add", "-d", "storage", f"s3://{BUCKET}/dvcstore"], root, env)
    run(["dvc", "remote", "modify", "storage", "endpointurl", url], root, env)
    config = (root / ".dvc" / "config").read_text()
    assert f"endpointurl = {url}" in config and url.startswith("http://127.0.0.1:")
    _round_trip(root, env)
    keys = [obj["Key"] for obj in client.list_objects_v2(Bucket=BUCKET, Prefix="dvcstore/")["Contents"]]
    assert len(keys) == 31 and all(key.startswith("dvcstore/files/md5/") for key in keys)
