"""Pretrained presets: the registry, ``$ALBERT_TF_PRESETS``, and fetching into the cache against a loopback server
(download, verification, resume, lock, offline, bad downloads). Nothing reaches the internet."""

from __future__ import annotations

import errno
import json
import os
import pathlib
import subprocess
import sys

import pytest

from albert_tf.checkpoints import download, presets
from albert_tf.checkpoints.download import DownloadError, fetch
from albert_tf.checkpoints.preset_files import locate
from albert_tf.checkpoints.presets import PresetError, get_preset
from albert_tf.checkpoints.pretrained import fill_from_preset, is_preset_name, resolve_pretrained
from tests.preset_server import PresetServer, presets_file, sha256, tarball, write_release

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def release(tmp_path_factory, spm_model):
    """A tiny released model in Google's tarball layout, and its archive bytes."""
    folder = write_release(tmp_path_factory.mktemp("release") / "albert_tiny", spm_model)
    return {"folder": folder, "archive": tarball(folder, "albert_tiny")}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ALBERT_TF_OFFLINE", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def server(release):
    with PresetServer() as s:
        s.files["albert_tiny.tar.gz"] = release["archive"]
        yield s


def use_presets(tmp_path, monkeypatch, entries: dict) -> str:
    path = presets_file(tmp_path / "presets.json", entries)
    monkeypatch.setenv("ALBERT_TF_PRESETS", path)
    return path


def final_names(cache: pathlib.Path) -> list[str]:
    root = cache / "presets"
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


# ------------------------------------------------------------------------------------------------ the registry


def test_built_in_registry_names_every_release():
    known = presets.presets()
    for size in ("base", "large", "xlarge", "xxlarge"):
        for v in (1, 2):
            tar = known[f"albert_{size}_v{v}"]
            assert tar.url == f"https://storage.googleapis.com/albert_models/albert_{size}_v{v}.tar.gz"
            assert tar.format == "official" and tar.kind == "archive"
            assert known[f"albert/albert-{size}-v{v}"].kind == "huggingface"
            assert get_preset(f"albert-{size}-v{v}").name == f"albert/albert-{size}-v{v}"  # the old id
        assert known[f"albert_{size}_zh"].url.endswith(f"/albert_{size}_zh.tar.gz")
        for release in (1, 3):
            hub = known[f"https://tfhub.dev/google/albert_{size}/{release}"]
            assert hub.format == "hub_module" and hub.url.endswith(f"/google/albert_{size}/{release}.tar.gz")
        assert f"https://tfhub.dev/google/albert_{size}/2" not in known  # google-research/albert#94
    assert get_preset("hf://someone/albert-custom").kind == "huggingface"
    with pytest.raises(PresetError, match="unknown pretrained preset 'albert_huge'.*albert_base_v2"):
        get_preset("albert_huge")


def test_a_path_wins_over_a_name(tmp_path, monkeypatch):
    assert is_preset_name("albert_base_v2")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "albert_base_v2").mkdir()
    assert not is_preset_name("albert_base_v2")  # a folder of that name is a path
    assert not is_preset_name("no_such_name") and not is_preset_name(None)
    values = {"init_checkpoint": "albert_base_v2", "albert_config_file": None}
    assert fill_from_preset(dict(values), set()) == values  # a path is left alone: nothing fetched


def test_a_misspelt_name_is_named_with_the_closest_ones(tmp_path, monkeypatch):
    from albert_tf.checkpoints.pretrained import check_bare_name

    monkeypatch.chdir(tmp_path)
    with pytest.raises(PresetError, match=r"--init_checkpoint albert_base_v3: no such file or folder, and not a "
                                          r"pretrained preset name; did you mean albert_base_v2"):
        check_bare_name("albert_base_v3")
    check_bare_name("out/run/ckpt-3")  # a path (with a folder) is left to the checkpoint loader's message
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    monkeypatch.setenv("ALBERT_TF_PRESETS", str(broken))
    with pytest.raises(PresetError, match=r"broken.json: line 1: not valid JSON"):
        is_preset_name("mine")  # the file's error, not "no such checkpoint"


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", r"presets.json: line 1: not valid JSON"),
        ('["a"]', r"presets.json: expected a JSON object"),
        ('{"m": {"url": "x.tar.gz", "sha": "1"}}', r"presets.json: entry 'm': unknown key 'sha'"),
        ('{"m": {"sha256": "' + "a" * 64 + '"}}', r"presets.json: entry 'm': \"url\" is required"),
        ('{"m": {"url": "x.tar.gz", "sha256": "abc"}}', r"presets.json: entry 'm': \"sha256\" must be 64 hex"),
        ('{"m": {"url": "x.tar.gz", "size": true}}', r"presets.json: entry 'm': 'size' must be int"),
        ('{"m": {"url": "x.tar.gz", "format": "onnx"}}', r"presets.json: entry 'm': \"format\" must be one of"),
        ('{"m": "x.tar.gz"}', r"presets.json: entry 'm': expected an object"),
    ],
)
def test_bad_presets_file_is_one_line_naming_file_and_entry(tmp_path, monkeypatch, text, message):
    path = tmp_path / "presets.json"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("ALBERT_TF_PRESETS", str(path))
    with pytest.raises(PresetError, match=message):
        presets.presets()
    monkeypatch.setenv("ALBERT_TF_PRESETS", str(tmp_path / "nope.json"))
    with pytest.raises(PresetError, match=r"ALBERT_TF_PRESETS=.*nope.json: file not found"):
        presets.presets()


def test_user_entry_replaces_a_built_in_and_resolves_relative_paths(tmp_path, monkeypatch):
    use_presets(tmp_path, monkeypatch, {"albert_base_v2": {"url": "mirror/albert_base_v2.tar.gz"},
                                        "mine": {"url": "file://weights.tar.gz", "do_lower_case": False}})
    mirror = get_preset("albert_base_v2")
    assert mirror.url == str(tmp_path / "mirror" / "albert_base_v2.tar.gz")
    assert mirror.source == str(tmp_path / "presets.json")
    mine = get_preset("mine")
    assert mine.url == "file://" + str(tmp_path / "weights.tar.gz") and mine.do_lower_case is False


# ------------------------------------------------------------------------------------------------ fetching


def test_fetch_verifies_unpacks_and_serves_the_cache_after(tmp_path, monkeypatch, cache, server, release):
    digest = sha256(release["archive"])
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz"), "sha256": digest,
                                                 "size": len(release["archive"])}})
    lines = []
    folder = fetch(get_preset("tiny"), progress=lines.append)
    assert server.gets("albert_tiny.tar.gz") == 1
    assert any("downloading" in line for line in lines), lines
    record = json.loads((pathlib.Path(folder) / ".albert_tf_preset.json").read_text())
    assert record["sha256"] == digest and record["checked"] == "sha256"
    assert not list((cache / "downloads").iterdir())  # the archive is gone once unpacked
    found = resolve_pretrained("tiny")
    assert found.format == "official" and found.checkpoint.endswith(os.path.join("albert_tiny", "model.ckpt-best"))
    assert pathlib.Path(found.albert_config_file).name == "albert_config.json"
    assert pathlib.Path(found.spm_model_file).name == "30k-clean.model" and found.vocab_file is None
    assert server.gets("albert_tiny.tar.gz") == 1  # the second resolution read the cache
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    assert resolve_pretrained("tiny").checkpoint == found.checkpoint
    values = fill_from_preset({"init_checkpoint": "tiny", "albert_config_file": None, "spm_model_file": "own.model",
                               "do_lower_case": True}, given={"spm_model_file"})
    assert values == {"init_checkpoint": found.checkpoint, "albert_config_file": found.albert_config_file,
                      "spm_model_file": "own.model", "do_lower_case": True}  # a given flag wins


def test_entry_without_checksum_is_checked_by_size_and_archive(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz")}})
    folder = fetch(get_preset("tiny"), progress=lambda line: None)
    record = json.loads((pathlib.Path(folder) / ".albert_tf_preset.json").read_text())
    assert record["checked"] == "size and archive" and len(record["sha256"]) == 64  # recorded for pinning


def test_offline_with_an_empty_cache_is_one_error(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz")}})
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    with pytest.raises(DownloadError, match=r"preset 'tiny' is not in the cache .* \$ALBERT_TF_OFFLINE forbids"):
        resolve_pretrained("tiny")
    assert server.requests == []


def test_404_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"gone": {"url": server.url("gone.tar.gz")}})
    with pytest.raises(DownloadError, match=r"preset 'gone': http://127.0.0.1:\d+/gone.tar.gz: HTTP 404 Not Found"):
        fetch(get_preset("gone"), progress=lambda line: None)
    assert final_names(cache) == []


def test_cut_transfer_resumes_with_a_range_request(tmp_path, monkeypatch, cache, server, release):
    size = len(release["archive"])
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz"),
                                                 "sha256": sha256(release["archive"])}})
    server.cut_after = size // 3
    with pytest.raises(DownloadError, match=r"(connection closed|transfer broke) after \d+ .*run the same command "
                                            r"again to resume"):
        fetch(get_preset("tiny"), progress=lambda line: None)
    part = cache / "downloads" / "tiny.part"
    assert part.stat().st_size == size // 3 and final_names(cache) == []  # nothing under the final name
    fetch(get_preset("tiny"), progress=lambda line: None)
    assert server.requests[-1] == ("albert_tiny.tar.gz", f"bytes={size // 3}-")  # continued, not restarted
    assert final_names(cache) == ["tiny"] and not part.exists()


def test_checksum_mismatch_deletes_the_download(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz"), "sha256": "0" * 64}})
    with pytest.raises(DownloadError, match=r"preset 'tiny': checksum mismatch .*\(expected sha256 0{64}, got "
                                            r"[0-9a-f]{64}\); the download was deleted"):
        fetch(get_preset("tiny"), progress=lambda line: None)
    assert final_names(cache) == [] and not list((cache / "downloads").iterdir())


def test_size_that_disagrees_with_the_entry_is_refused_before_the_body(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz"), "size": 12}})
    with pytest.raises(DownloadError, match=r"serves \d+ bytes, the entry says 12"):
        fetch(get_preset("tiny"), progress=lambda line: None)
    assert final_names(cache) == []


def test_damaged_archive_is_deleted(tmp_path, monkeypatch, cache, server, release):
    server.files["broken.tar.gz"] = release["archive"][: len(release["archive"]) // 2]  # gzip cut short
    use_presets(tmp_path, monkeypatch, {"broken": {"url": server.url("broken.tar.gz")}})
    with pytest.raises(DownloadError, match=r"not a readable .tar.gz/.tar/.zip archive .* deleted"):
        fetch(get_preset("broken"), progress=lambda line: None)
    assert final_names(cache) == [] and not list((cache / "downloads").iterdir())


def test_an_html_page_where_an_archive_was_expected_is_named(tmp_path, monkeypatch, cache, server):
    """A sign-in or error page served with status 200 (a share link, not a download link) is named as a page."""
    server.files["login.tar.gz"] = b"\n<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body></body></html>\n"
    use_presets(tmp_path, monkeypatch, {"page": {"url": server.url("login.tar.gz")}})
    with pytest.raises(DownloadError, match=r"preset 'page': .*login.tar.gz answered with an HTML page, not an "
                                            r"archive .* direct download link"):
        fetch(get_preset("page"), progress=lambda line: None)
    assert final_names(cache) == [] and not list((cache / "downloads").iterdir())


def test_offline_cache_of_another_url_says_so(tmp_path, monkeypatch, cache, server, release):
    """Offline, a cached copy fetched from the entry's old URL is named with both URLs, not "not in the cache"."""
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz")}})
    fetch(get_preset("tiny"), progress=lambda line: None)
    server.files["albert_tiny_v2.tar.gz"] = release["archive"]
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny_v2.tar.gz")}})
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    with pytest.raises(DownloadError, match=r"preset 'tiny': the cache holds a copy .* fetched from "
                                            r"http://127.0.0.1:\d+/albert_tiny.tar.gz, but the preset's URL is now "
                                            r"http://127.0.0.1:\d+/albert_tiny_v2.tar.gz"):
        resolve_pretrained("tiny")


def test_archive_that_is_no_checkpoint_is_named(tmp_path, monkeypatch, cache, server):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README").write_text("nothing here")
    server.files["other.tar.gz"] = tarball(empty, "other")
    use_presets(tmp_path, monkeypatch, {"other": {"url": server.url("other.tar.gz")}})
    with pytest.raises(PresetError, match=r"preset 'other': .* holds no a checkpoint|holds no"):
        fetch(get_preset("other"), progress=lambda line: None)
    assert final_names(cache) == []


def test_full_disk_is_refused_before_the_download(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz")}})

    class Usage:
        free = 10

    monkeypatch.setattr(download.shutil, "disk_usage", lambda path: Usage)
    with pytest.raises(DownloadError, match=r"preset 'tiny': needs [\d.]+ MB in .*downloads, only 0.0 MB free"):
        fetch(get_preset("tiny"), progress=lambda line: None)
    assert final_names(cache) == []


def test_disk_filling_up_during_the_download_is_one_line(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz")}})

    real_open = open

    class FullFile:
        """``open`` of the download's part file, on a disk that is full."""

        def __init__(self, path, mode="r", **kwargs):
            self.f = real_open(path, mode, **kwargs)  # noqa: SIM115 (closed in __exit__)
            self.full = str(path).endswith(".part")

        def read(self, *args):
            return self.f.read(*args)

        def fileno(self):
            return self.f.fileno()

        def write(self, data):
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(data)

        def flush(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(download, "open", FullFile, raising=False)
    with pytest.raises(DownloadError, match=r"preset 'tiny': no space left on the device of .*tiny.part"):
        fetch(get_preset("tiny"), progress=lambda line: None)
    assert final_names(cache) == []


def test_local_archive_and_folder_sources(tmp_path, monkeypatch, cache, release):
    archive = tmp_path / "albert_tiny.tar.gz"
    archive.write_bytes(release["archive"])
    use_presets(tmp_path, monkeypatch, {"by_url": {"url": f"file://{archive}"},
                                        "by_path": {"url": "albert_tiny.tar.gz"},
                                        "folder": {"url": str(release["folder"])}})
    assert resolve_pretrained("by_url").format == "official"
    assert resolve_pretrained("by_path").format == "official"
    in_place = resolve_pretrained("folder")  # a folder is used where it is, not copied
    assert in_place.directory == str(release["folder"]) and final_names(cache) == ["by_path", "by_url"]


FETCH_SCRIPT = """
import sys
from albert_tf.checkpoints.pretrained import resolve_pretrained
print(resolve_pretrained("tiny").checkpoint)
"""


def test_two_processes_fetching_one_preset_download_it_once(tmp_path, monkeypatch, cache, server, release):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz"),
                                                 "sha256": sha256(release["archive"])}})
    server.delay_s = 0.05  # long enough that the second process arrives during the first one's transfer
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", FETCH_SCRIPT], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    assert outs[0][0] == outs[1][0] and outs[0][0].strip().endswith("model.ckpt-best")
    assert server.gets("albert_tiny.tar.gz") == 1
    assert any("another process is fetching it" in o[1] for o in outs)
    assert final_names(cache) == ["tiny"]


def test_staging_left_by_a_killed_fetch_is_cleared(tmp_path, monkeypatch, cache, server):
    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz")}})
    stale = cache / "presets" / ".staging-tiny-99999"
    stale.mkdir(parents=True)
    (stale / "half").write_text("x")
    fetch(get_preset("tiny"), progress=lambda line: None)
    assert not stale.exists() and final_names(cache) == ["tiny"]


def test_located_files_of_a_huggingface_and_hub_folder(tmp_path, release, monkeypatch):
    """An in-place folder of each kind resolves to the files the runners need."""
    from albert_tf.checkpoints.official import save_official_checkpoint  # noqa: F401 (TensorFlow present)

    hub = tmp_path / "hub"
    (hub / "variables").mkdir(parents=True)
    (hub / "assets").mkdir()
    (hub / "tfhub_module.pb").write_bytes(b"")
    for suffix in (".index", ".data-00000-of-00001"):
        src = release["folder"] / f"model.ckpt-best{suffix}"
        (hub / "variables" / f"variables{suffix}").write_bytes(src.read_bytes())
    (hub / "assets" / "albert_config.json").write_bytes((release["folder"] / "albert_config.json").read_bytes())
    (hub / "assets" / "30k-clean.model").write_bytes((release["folder"] / "30k-clean.model").read_bytes())
    found = locate(str(hub), presets.Preset("hub", str(hub), format="hub_module"))
    assert found.format == "hub_module" and found.checkpoint == str(hub)
    assert found.albert_config_file.endswith("albert_config.json") and found.spm_model_file.endswith(".model")


def test_huggingface_preset_through_huggingface_hub(tmp_path, monkeypatch, cache, release):
    """A Hub id is fetched with ``huggingface_hub.snapshot_download`` (replaced here by a copy of a local folder
    written by the package's own converter) and gains the albert_config.json the runners read."""
    import shutil

    import huggingface_hub

    from albert_tf.checkpoints.convert import convert

    folder = tmp_path / "hub_copy"
    convert(str(release["folder"] / "model.ckpt-best"), "official", str(folder), "huggingface", log=lambda line: None)
    calls = []

    def snapshot_download(repo_id, local_dir, allow_patterns):
        calls.append(repo_id)
        shutil.copytree(folder, local_dir, dirs_exist_ok=True)
        return local_dir

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    found = resolve_pretrained("albert-base-v2")  # the old id maps to albert/albert-base-v2
    assert calls == ["albert/albert-base-v2"] and found.format == "huggingface"
    assert pathlib.Path(found.albert_config_file).name == "albert_config.json"
    assert pathlib.Path(found.spm_model_file).name == "spiece.model"
    assert final_names(cache) == ["albert--albert-base-v2"]
    resolve_pretrained("albert/albert-base-v2")
    assert calls == ["albert/albert-base-v2"]  # cached


def test_listing_shows_size_and_cache_state(tmp_path, monkeypatch, cache, server, release):
    from albert_tf.checkpoints.pretrained import describe_presets

    use_presets(tmp_path, monkeypatch, {"tiny": {"url": server.url("albert_tiny.tar.gz"), "description": "mine"}})
    line = next(x for x in describe_presets().splitlines() if x.strip().startswith("tiny "))
    assert "size unknown" in line and "not cached" in line and line.endswith(f"mine [{tmp_path / 'presets.json'}]")
    fetch(get_preset("tiny"), progress=lambda line: None)
    line = next(x for x in describe_presets().splitlines() if x.strip().startswith("tiny "))
    assert f"{len(release['archive']) / 1e6:,.1f} MB" in line and " cached " in line
    listing = subprocess.run([sys.executable, "-m", "albert_tf.configs"], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert listing.returncode == 0 and "albert_base_v2" in listing.stdout and "tiny " in listing.stdout
    assert "tensorflow" not in listing.stderr.lower()  # the listing does not import TensorFlow
