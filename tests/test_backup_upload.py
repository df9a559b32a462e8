"""The backup CronJobs' upload, run as shipped by a POSIX shell against a stand-in `curl` that answers as
S3 does: a file up to the largest single PUT goes up in one PUT; a larger one (an etcd snapshot near its
8 GiB quota: S3 stores outside AWS keep AWS's 5 GiB PUT limit) as a multipart upload whose parts put
back together are the file, completed with every part's ETag in order; a failed part, an answer
without an UploadId or a Complete that answers an Error fails the Job and aborts the upload."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from constructs.host_backup import PART_MIB, SINGLE_PUT_MAX_BYTES, UPLOAD_SCRIPT
from sitegen.tree.documents import load_tree

from .conftest import DIST

MIB = 1048576
UPLOAD_ID = "up+id/1="  # characters an UploadId may hold that a query must encode

# The stand-in: logs each call (its arguments, the bytes it was given) and answers as S3 would.
FAKE_CURL = r"""#!PYTHON
import json, os, sys
args = sys.argv[1:]
log = os.environ["CURL_LOG"]
url = next(a for a in args if a.startswith("https://"))
call = {"url": url, "method": args[args.index("-X") + 1] if "-X" in args else "PUT"}
calls = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
if "-T" in args:
    data = open(args[args.index("-T") + 1], "rb").read()
    stored = f"{log}.{len(calls)}"
    open(stored, "wb").write(data)
    call["stored"] = stored
if "--data-binary" in args:
    body = args[args.index("--data-binary") + 1]
    call["body"] = open(body[1:]).read() if body.startswith("@") else body
open(log, "a").write(json.dumps(call) + "\n")
fail = os.environ.get("CURL_FAIL", "")
if fail and fail in url:
    sys.exit(22)
if url.endswith("?uploads"):
    sys.stdout.write(os.environ.get("CURL_INITIATE", f"<InitiateMultipartUploadResult><UploadId>{os.environ['UPLOAD_ID']}</UploadId></InitiateMultipartUploadResult>"))
elif "partNumber=" in url:
    number = url.split("partNumber=")[1].split("&")[0]
    sys.stdout.write(f'HTTP/1.1 200 OK\r\nETag: "etag-{number}"\r\nContent-Length: 0\r\n\r\n')
elif call["method"] == "POST":
    sys.stdout.write(os.environ.get("CURL_COMPLETE", "<CompleteMultipartUploadResult/>"))
"""


def _upload(tmp_path: Path, size: int, **env: str) -> tuple[subprocess.CompletedProcess, list[dict], bytes]:
    """The script run on a file of `size` bytes, with a small single-PUT limit and 1 MiB parts."""
    bin_dir, parts, keys = tmp_path / "bin", tmp_path / "parts", tmp_path / "keys"
    for d in (bin_dir, parts, keys):
        d.mkdir(exist_ok=True)
    curl = bin_dir / "curl"
    curl.write_text(FAKE_CURL.replace("#!PYTHON", f"#!{sys.executable}"))
    curl.chmod(0o755)
    (keys / "AWS_ACCESS_KEY_ID").write_text("id")
    (keys / "AWS_SECRET_ACCESS_KEY").write_text("secret")
    data = bytes(i % 251 for i in range(size))
    (tmp_path / "snapshot.db").write_bytes(data)
    log = tmp_path / "calls.jsonl"
    log.unlink(missing_ok=True)
    run_env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}", "PREFIX": "etcd", "CLUSTER": "ai", "SUFFIX": ".db",
        "BUCKET": "site-backups", "S3_HOST": "s3.example", "S3_REGION": "us-east-1", "CA_FILE": "/ca.crt",
        "OUTPUT": str(tmp_path / "snapshot.db"), "KEYS": str(keys), "NODE_NAME": "cp01",
        "SINGLE_PUT_MAX_BYTES": str(2 * MIB), "PART_MIB": "1", "PARTS": str(parts),
        "CURL_LOG": str(log), "UPLOAD_ID": UPLOAD_ID, **env,
    }  # fmt: skip
    shell = shutil.which("sh")
    assert shell is not None
    result = subprocess.run(
        [shell, "-c", UPLOAD_SCRIPT], env=run_env, capture_output=True, text=True, timeout=60
    )
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, calls, data


def test_a_file_within_one_put_goes_up_in_one_put(tmp_path):
    result, calls, data = _upload(tmp_path, 2 * MIB)
    assert result.returncode == 0, result.stderr
    (put,) = calls
    assert put["method"] == "PUT" and "?" not in put["url"]
    assert put["url"].startswith("https://s3.example/site-backups/etcd/ai/") and put["url"].endswith(
        "-cp01.db"
    )
    assert Path(put["stored"]).read_bytes() == data


def test_a_larger_file_goes_up_in_parts_that_make_it_whole(tmp_path):
    result, calls, data = _upload(tmp_path, 2 * MIB + 5 * MIB // 2)  # 4.5 MiB: parts of 1, 1, 1, 1, 0.5
    assert result.returncode == 0, result.stderr
    initiate, *parts, complete = calls
    assert initiate["method"] == "POST" and initiate["url"].endswith("?uploads")
    encoded = "up%2Bid%2F1%3D"
    assert [p["url"].split("?")[1] for p in parts] == [
        f"partNumber={n}&uploadId={encoded}" for n in range(1, 6)
    ]
    assert b"".join(Path(p["stored"]).read_bytes() for p in parts) == data
    assert complete["method"] == "POST" and complete["url"].endswith(f"?uploadId={encoded}")
    assert complete["body"] == (
        "<CompleteMultipartUpload>"
        + "".join(f'<Part><PartNumber>{n}</PartNumber><ETag>"etag-{n}"</ETag></Part>' for n in range(1, 6))
        + "</CompleteMultipartUpload>"
    )
    assert f"({len(data)} bytes)" in result.stdout


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"CURL_FAIL": "partNumber=3"}, ""),  # a part refused (curl -f exits 22): no ETag
        ({"CURL_INITIATE": "<Error><Code>AccessDenied</Code></Error>"}, "no UploadId"),
        ({"CURL_COMPLETE": "<Error><Code>InternalError</Code></Error>"}, "InternalError"),
    ],
)
def test_a_failed_multipart_upload_fails_the_job_and_is_aborted(tmp_path, env, said):
    result, calls, _ = _upload(tmp_path, 3 * MIB, **env)
    assert result.returncode != 0 and said in result.stderr
    if "CURL_INITIATE" not in env:  # an upload that began is aborted
        assert calls[-1]["method"] == "DELETE" and calls[-1]["url"].endswith("?uploadId=up%2Bid%2F1%3D")


def test_the_shipped_jobs_use_s3s_limits_and_a_scratch_for_one_part():
    """S3's largest PUT and its part sizes (5 MiB to 5 GiB, at most 10,000 parts) against the largest
    etcd quota (8 GiB): every backup CronJob of dist/ mounts a writable scratch that holds one part."""
    assert SINGLE_PUT_MAX_BYTES == 5 * 2**30 and 5 <= PART_MIB <= 5 * 1024
    assert 8 * 1024 / PART_MIB <= 10_000
    jobs = [
        d.body for d in load_tree(DIST)
        if d.kind == "CronJob" and d.variant == "one-cluster"
        and any(c["name"] == "upload" for c in d.body["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"])
    ]  # fmt: skip
    assert len(jobs) >= 5  # etcd to AIStor, etcd and PKI to the second target, the two databases' dumps
    for job in jobs:
        pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        (upload,) = [c for c in pod["containers"] if c["name"] == "upload"]
        env = {e["name"]: e.get("value") for e in upload["env"]}
        mount = next(m for m in upload["volumeMounts"] if m["mountPath"] == env["PARTS"])
        assert not mount.get("readOnly")
        scratch = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert int(scratch["emptyDir"]["sizeLimit"].removesuffix("Gi")) * 1024 > int(env["PART_MIB"])
