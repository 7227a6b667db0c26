"""The asv dashboard offline (scripts/asv_dashboard.py): the CDN URLs of asv's published page
replaced by npm copies pinned by checksum, and the page rendered in Chromium without network.

The rewriting is checked on the page asv itself ships (its ``www/index.html``, whose integrity
pins are the CDN's own checksums); the tarball and file checks on small tarballs built here.
The browser tests (marker ``browser``) need Chromium, ``websockets`` and a published dashboard
with at least 5 commits in ``.asv/html`` (``scripts/asv_history.sh``); they are skipped otherwise.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import re
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import asv_dashboard as dash  # noqa: E402
import check_report  # noqa: E402

ASV_WWW = Path(importlib.util.find_spec("asv").origin).parent / "www" if importlib.util.find_spec("asv") else None
needs_asv = pytest.mark.skipif(ASV_WWW is None or not (ASV_WWW / "index.html").is_file(),
                               reason="needs asv installed (its www/index.html)")


def _sri(algorithm: str, data: bytes) -> str:
    return f"{algorithm}-" + base64.b64encode(hashlib.new(algorithm, data).digest()).decode()


def _tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _integrity_pins(html: str) -> dict[str, str]:
    """URL -> the integrity attribute of its <script>/<link> tag."""
    out = {}
    for tag in re.findall(r"<(?:script|link)\b[^>]*>", html):
        url = re.search(r'(?:src|href)="(https?://[^"]+)"', tag)
        pin = re.search(r'integrity="([^"]+)"', tag)
        if url and pin:
            out[url.group(1)] = pin.group(1)
    return out


# ------------------------------------------------------------------ the manifest and the rewrite

@needs_asv
def test_the_manifest_knows_every_cdn_url_of_asvs_page():
    urls = dash.remote_urls((ASV_WWW / "index.html").read_text())
    assert urls, "asv's page loads nothing from a CDN: this module is no longer needed"
    assert set(urls) <= set(dash.BY_CDN), set(urls) - set(dash.BY_CDN)


@needs_asv
def test_files_marked_identical_to_the_cdn_have_the_checksum_asvs_page_pins():
    """An asset marked ``cdn_identical`` whose page pin is a sha256 must have that sha256 (the
    CDN's bytes); sha512 pins are checked on the bytes by ``vendor`` (next tests)."""
    pins = _integrity_pins((ASV_WWW / "index.html").read_text())
    assert pins == dash.page_pins((ASV_WWW / "index.html").read_text())
    identical = [a for a in dash.ASSETS if a.cdn_identical]
    assert identical
    for asset in identical:
        if pins[asset.cdn].startswith("sha256-"):
            assert pins[asset.cdn] == asset.sri, asset.cdn


def test_subresource_integrity_digests():
    # FIPS 180-2 test vector: SHA-256("abc") = ba7816bf...f20015ad
    abc = base64.b64encode(bytes.fromhex(
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")).decode()
    assert dash.matches_sri(b"abc", f"sha256-{abc}")
    assert not dash.matches_sri(b"abd", f"sha256-{abc}")
    assert not dash.matches_sri(b"abc", f"md5-{abc}")
    assert dash.matches_sri(b"abc", _sri("sha512", b"abc"))


@needs_asv
def test_rewritten_page_loads_nothing_remote_and_pins_each_local_copy():
    page = (ASV_WWW / "index.html").read_text()
    out = dash.rewrite(page)
    assert dash.remote_urls(out) == []
    pins = _integrity_pins(out.replace('src="vendor/', 'src="https://x/vendor/').replace('href="vendor/', 'href="https://x/vendor/'))
    local = {a.local: a for a in dash.ASSETS if a.cdn}
    assert {u.removeprefix("https://x/") for u in pins} == set(local)
    for url, pin in pins.items():
        assert pin == local[url.removeprefix("https://x/")].sri
    # the link to asv's home is a link, not a load: kept
    assert "https://github.com/airspeed-velocity/asv/" in out
    # everything else of the page is untouched
    strip = re.compile(r"<(script|link)\b[^>]*>")
    assert strip.sub("", out) == strip.sub("", page)


def test_an_unknown_cdn_url_is_named():
    page = '<script src="https://cdn.example.org/lib.js" integrity="sha256-x"></script>'
    with pytest.raises(dash.DashboardError, match="cdn.example.org/lib.js"):
        dash.rewrite(page)


def test_vendor_refuses_a_page_with_an_unknown_url_before_downloading(tmp_path, capsys, monkeypatch):
    (tmp_path / "index.html").write_text('<link rel="stylesheet" href="//cdn.example.org/a.css">')
    monkeypatch.setattr(dash, "tarball", lambda *a, **k: pytest.fail("downloaded before checking the page"))
    assert dash.main(["vendor", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cdn.example.org/a.css" in err


def test_vendor_on_a_folder_without_pages_is_a_one_line_error(tmp_path, capsys):
    assert dash.main(["vendor", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "asv publish" in err


# ------------------------------------------------------------------ tarballs and files by checksum

@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A package whose pinned integrity is that of a tarball built here; the registry unreachable."""
    good = _tgz({"lib.js": b"window.ok = 1;\n"})
    pkg = dash.Package("fakepkg", "1.0.0", _sri("sha512", good))

    def offline(*args, **kwargs):
        raise OSError("network is off in this test")
    monkeypatch.setattr(dash.urllib.request, "urlopen", offline)
    return pkg, good, tmp_path / "cache", tmp_path / "mirror"


def test_a_mirror_copy_with_the_pinned_integrity_is_used_and_cached(fake):
    pkg, good, cache, mirror = fake
    mirror.mkdir()
    (mirror / pkg.tarball).write_bytes(good)
    assert dash.tarball(pkg, mirror, cache) == good
    assert (cache / pkg.tarball).read_bytes() == good
    assert dash.tarball(pkg, None, cache) == good               # from the cache, no mirror needed


def test_a_mirror_copy_with_another_checksum_is_refused_and_left_alone(fake):
    pkg, good, cache, mirror = fake
    mirror.mkdir()
    bad = good[:-1] + bytes([good[-1] ^ 1])
    (mirror / pkg.tarball).write_bytes(bad)
    with pytest.raises(dash.DashboardError, match="checksum mismatch.*refused"):
        dash.tarball(pkg, mirror, cache)
    assert (mirror / pkg.tarball).read_bytes() == bad
    assert not (cache / pkg.tarball).exists()


def test_a_bad_cached_copy_is_deleted_and_the_mirror_used(fake):
    pkg, good, cache, mirror = fake
    cache.mkdir()
    (cache / pkg.tarball).write_bytes(b"truncated")
    mirror.mkdir()
    (mirror / pkg.tarball).write_bytes(good)
    assert dash.tarball(pkg, mirror, cache) == good
    assert (cache / pkg.tarball).read_bytes() == good


def test_no_copy_anywhere_names_the_mirror_variable(fake):
    pkg, _, cache, mirror = fake
    mirror.mkdir()
    with pytest.raises(dash.DashboardError, match=f"npm pack fakepkg@1.0.0.*{dash.MIRROR_ENV}"):
        dash.tarball(pkg, mirror, cache)


def test_a_file_is_taken_from_its_tarball_only_with_its_pinned_sha256(fake):
    pkg, good, _, _ = fake
    content = b"window.ok = 1;\n"
    right = dash.Asset(None, pkg, "lib.js", hashlib.sha256(content).hexdigest())
    assert dash.extract(right, good) == content
    wrong = dash.Asset(None, pkg, "lib.js", hashlib.sha256(content + b" ").hexdigest())
    with pytest.raises(dash.DashboardError, match="lib.js: sha256"):
        dash.extract(wrong, good)
    missing = dash.Asset(None, pkg, "other.js", right.sha256)
    with pytest.raises(dash.DashboardError, match="no package/other.js"):
        dash.extract(missing, good)


def test_vendor_writes_the_copies_and_rewrites_the_page(fake, tmp_path, monkeypatch):
    pkg, good, cache, mirror = fake
    mirror.mkdir()
    (mirror / pkg.tarball).write_bytes(good)
    content = b"window.ok = 1;\n"
    asset = dash.Asset("https://cdn.example.org/lib.min.js", pkg, "lib.js", hashlib.sha256(content).hexdigest())
    monkeypatch.setattr(dash, "ASSETS", (asset,))
    monkeypatch.setattr(dash, "BY_CDN", {asset.cdn: asset})
    site = tmp_path / "html"
    site.mkdir()
    (site / "index.html").write_text(f'<script src="{asset.cdn}" integrity="sha512-cdn" crossorigin="anonymous"></script>')
    assert dash.vendor(site, mirror, cache) == [site / "index.html"]
    assert (site / "vendor" / "fakepkg@1.0.0" / "lib.js").read_bytes() == content
    assert (site / "index.html").read_text() == (
        f'<script src="vendor/fakepkg@1.0.0/lib.js" integrity="{_sri("sha256", content)}" crossorigin="anonymous"></script>')
    assert dash.vendor(site, mirror, cache) == []              # idempotent: nothing left to rewrite


def test_vendor_refuses_a_file_marked_as_the_cdns_copy_that_is_not(fake, tmp_path, monkeypatch):
    pkg, good, cache, mirror = fake
    mirror.mkdir()
    (mirror / pkg.tarball).write_bytes(good)
    content = b"window.ok = 1;\n"
    asset = dash.Asset("https://cdn.example.org/lib.min.js", pkg, "lib.js", hashlib.sha256(content).hexdigest(),
                       cdn_identical=True)
    monkeypatch.setattr(dash, "ASSETS", (asset,))
    monkeypatch.setattr(dash, "BY_CDN", {asset.cdn: asset})
    site = tmp_path / "html"
    site.mkdir()
    page = f'<script src="{asset.cdn}" integrity="{_sri("sha512", content + b"x")}"></script>'
    (site / "index.html").write_text(page)
    with pytest.raises(dash.DashboardError, match="marked as the CDN's copy"):
        dash.vendor(site, mirror, cache)
    assert (site / "index.html").read_text() == page
    (site / "index.html").write_text(page.replace(_sri("sha512", content + b"x"), _sri("sha512", content)))
    assert dash.vendor(site, mirror, cache) == [site / "index.html"]


# ------------------------------------------------------------------ in Chromium, offline

HTML = REPO / ".asv" / "html"


def _published_commits() -> int:
    import json
    try:
        return len(json.loads((HTML / "index.json").read_text())["revision_to_hash"])
    except (OSError, ValueError, KeyError):
        return 0


browser = [
    pytest.mark.browser,
    pytest.mark.skipif(check_report.find_chromium() is None, reason="needs Chromium on PATH"),
    pytest.mark.skipif(importlib.util.find_spec("websockets") is None, reason="needs websockets"),
    pytest.mark.skipif(_published_commits() < 5 or not (HTML / dash.VENDOR).is_dir(),
                       reason="needs a vendored dashboard of >= 5 commits in .asv/html (scripts/asv_history.sh)"),
]


@pytest.mark.parametrize("vendored", [True, False], ids=["vendored", "cdn"])
def test_the_graph_renders_offline_only_from_the_vendored_copies(tmp_path, vendored):
    """The published graph of the CPESph round shows >= 5 commits' points in a browser that can
    reach only 127.0.0.1; asv's own page (scripts on CDNs) shows none there, so the browser's
    network really is off and the vendored copies are what made the difference."""
    site = tmp_path / "html"
    shutil.copytree(HTML, site)
    if not vendored:
        shutil.copy(ASV_WWW / "index.html", site / "index.html")
    ok, what = dash.check(site, min_points=5, timeout=20 if vendored else 8)
    assert ok is vendored, what
    assert ("jQuery 3.3.1" in what) is vendored


for _mark in browser:
    test_the_graph_renders_offline_only_from_the_vendored_copies = _mark(
        test_the_graph_renders_offline_only_from_the_vendored_copies)
