"""The asv dashboard offline: its JavaScript and CSS from pinned npm packages, and a check in
headless Chromium with the network shut off.

    python scripts/asv_dashboard.py vendor [HTML_DIR] [--mirror DIR]
    python scripts/asv_dashboard.py check  [HTML_DIR] [--benchmark NAME] [--min-points N]
                                           [--screenshot PNG] [--timeout SECONDS]

``asv publish`` (asv 0.6) writes pages that load jQuery, flot and its plugins, stupidtable,
blueimp-md5 and Bootstrap from CDNs (code.jquery.com, cdnjs, jsdelivr): offline they render
nothing. ``vendor`` (run after ``asv publish``; HTML_DIR defaults to asv.conf.json's
``html_dir``) replaces every such URL in the published pages by a copy under
``HTML_DIR/vendor/<package>@<version>/``, taken from the package's npm tarball (``ASSETS``):
1. the tarball comes from the cache ``.asv/npm-cache/``, else a mirror folder (``--mirror`` or
   ``$RFL_NPM_MIRROR``: ``<name>-<version>.tgz`` files as ``npm pack`` names them), else the
   npm registry; it must match npm's pinned ``dist.integrity`` (sha512) or it is refused (in
   the cache it is deleted, in a mirror it is left alone);
2. each file taken from it must match its pinned sha256; the page's ``integrity`` attribute is
   set to that sha256, so the browser checks it again. Five of the nine files are the CDN's own
   bytes (``Asset.cdn_identical``: they are checked against the integrity asv's page pins too,
   as the browser would check the CDN's copy); flot 0.8.3
   is on npm unminified only (cdnjs serves its own minified copies), and stupidtable 1.0.1 is
   not on npm: stupid-table-plugin 1.1.3 (the same ``$.fn.stupidtable`` API) stands in.
A script or stylesheet URL the manifest does not know is an error naming it: a newer asv that
loads other libraries needs its entries here.

``check`` serves HTML_DIR on 127.0.0.1 and opens it in headless Chromium (scripts/check_report.py
drives it) that can reach nothing else: every host name but 127.0.0.1 resolves to nothing and
every other request goes to a closed proxy port. It opens the graph of --benchmark (default: the
CPESph round) and asks flot for the points it plotted; it fails unless some series has at least
--min-points (default 5) points, i.e. commits. --screenshot saves the page as a PNG. An
un-vendored page fails this check (its jQuery never loads).

Errors (bad folder, unknown URL, checksum mismatch, no copy reachable) are one line, exit 2; a
page that does not render, exit 1.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIRROR_ENV = "RFL_NPM_MIRROR"
REGISTRY = "https://registry.npmjs.org"
CACHE = ROOT / ".asv" / "npm-cache"
VENDOR = "vendor"
DEFAULT_BENCHMARK = "bench_rfedags.CPESphRound.time_round"


class DashboardError(Exception):
    """A one-line error: exit status 2."""


@dataclass(frozen=True)
class Package:
    """An npm package at one version; ``integrity`` is npm's ``dist.integrity`` (sha512, base64)."""

    name: str
    version: str
    integrity: str

    @property
    def tarball(self) -> str:
        return f"{self.name}-{self.version}.tgz"

    @property
    def url(self) -> str:
        return f"{REGISTRY}/{self.name}/-/{self.tarball}"

    @property
    def folder(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Asset:
    """One file of ``package`` (``path`` inside its ``package/`` folder) with its sha256 (hex);
    ``cdn`` is the URL asv's page loads it from (None: a file the page's CSS refers to);
    ``cdn_identical``: the same bytes as the CDN serves (its page's integrity pin matches)."""

    cdn: str | None
    package: Package
    path: str
    sha256: str
    cdn_identical: bool = False

    @property
    def local(self) -> str:
        """Path relative to the html folder."""
        return f"{VENDOR}/{self.package.folder}/{self.path}"

    @property
    def sri(self) -> str:
        return "sha256-" + base64.b64encode(bytes.fromhex(self.sha256)).decode()


JQUERY = Package("jquery", "3.3.1", "sha512-Ubldcmxp5np52/ENotGxlLe6aGMvmF4R8S6tZjsP6Knsaxd/xp3Zrh50cG93lR6nPXyUFwzN3ZSOQI0wRJNdGg==")
FLOT = Package("flot", "0.8.3", "sha512-xg2otcTJDvS+ERK+my4wxG/ASq90QURXtoM4LhacCq0jQW2jbyjdttbRNqU2cPykrpMvJ6b2uSp6SAgYAzj9tQ==")
ORDERBARS = Package("flot-orderbars", "1.0.0", "sha512-Jv51fvzevUjNXEeozpwEKfPjhiZhfiJddv0WHjduUTCmSF+7T5K7C9c9Y1wIVmUhDBv5fLMjgbwKecT0GIKPZA==")
STUPIDTABLE = Package("stupid-table-plugin", "1.1.3", "sha512-2Vk7XouQPxUQPRe9w0Fu7ZZ8kHLK7rDoLMsCgtKxRNJ7f4dSOGvW9CkHsq5wD6QsaEnWoyLBYH3xOEsrK3yWBg==")
MD5 = Package("blueimp-md5", "2.19.0", "sha512-DRQrD6gJyy8FbiE4s+bDoXS9hiW3Vbx5uCdwvcCf3zLHL+Iv7LtGHLpr+GZV8rHG8tK766FGYBwRbu8pELTt+w==")
BOOTSTRAP = Package("bootstrap", "3.1.1", "sha512-TAzqS8E/ISpVHP29gYhy+1NSV+FJwApDVQhDfgLYsIuUDJiqJzH2DfORN5tiu+Ie2iBLrzEG34t4Rf465cigqg==")

_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
_GLYPHS = "dist/fonts/glyphicons-halflings-regular"

#: every file the dashboard loads from a CDN in asv 0.6's pages, and the fonts Bootstrap's CSS names
ASSETS: tuple[Asset, ...] = (
    Asset("https://code.jquery.com/jquery-3.3.1.min.js", JQUERY, "dist/jquery.min.js",
          "160a426ff2894252cd7cebbdd6d6b7da8fcd319c65b70468f10b6690c45d02ef", cdn_identical=True),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.min.js", FLOT, "jquery.flot.js",
          "b7b931f273c38b1277b9c6c1f4e05c4ec09885a487bddaf3279e2d7e49a38e12"),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.time.min.js", FLOT, "jquery.flot.time.js",
          "a582c832adc7138a6b05aaf61f16ebac274701f1be4afea77e739a1c34b9c41a"),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.selection.min.js", FLOT, "jquery.flot.selection.js",
          "e6c85f6c1ebe4b4da29d8ae238c7c5060283f05f7ef054f6b91817d02c092918"),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.categories.min.js", FLOT, "jquery.flot.categories.js",
          "6e81664b28ea795c734906f4aa15614640a75ac7fbd399a7fb9084040698351a"),
    Asset("https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js", ORDERBARS,
          "js/jquery.flot.orderBars.js",
          "39735b4f46f96ff4e082572401f47c55a2767b366fd1d1e821e44a8d830a12bf", cdn_identical=True),
    Asset(f"{_CDNJS}/stupidtable/1.0.1/stupidtable.min.js", STUPIDTABLE, "stupidtable.min.js",
          "4642380f28ebe9ed7cac251793b281ef8620c4386205d92788f9b12f5cceb4e0"),
    Asset(f"{_CDNJS}/blueimp-md5/2.19.0/js/md5.min.js", MD5, "js/md5.min.js",
          "64d7ded388c562e4bde9e58ce205e5fa01b9734fcd434d496eb7b4fbfe9b927d", cdn_identical=True),
    Asset("https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js", BOOTSTRAP,
          "dist/js/bootstrap.min.js",
          "898d05a17f2cfc5120ddcdba47a885c378c0b466f30f0700e502757e24b403a1", cdn_identical=True),
    Asset("https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css", BOOTSTRAP,
          "dist/css/bootstrap.min.css",
          "e9503448692b738dd260fbd7f7cabf2e11f09b600fa97e6eb3a56eba5b1a7e9b", cdn_identical=True),
    Asset(None, BOOTSTRAP, f"{_GLYPHS}.eot", "f495f34e4f177cf0115af995bbbfeb3fcabc88502876e76fc51a4ab439bc8431"),
    Asset(None, BOOTSTRAP, f"{_GLYPHS}.svg", "d168d50a88c730b4e6830dc0da2a2b51dae4658a77d9619943c27b8ecfc19d1a"),
    Asset(None, BOOTSTRAP, f"{_GLYPHS}.ttf", "bd18efd3efd70fec8ad09611a20cdbf99440b2c1d40085c29be036f891d65358"),
    Asset(None, BOOTSTRAP, f"{_GLYPHS}.woff", "fc969dc1c6ff531abcf368089dcbaf5775133b0626ff56b52301a059fc0f9e1e"),
)
BY_CDN = {a.cdn: a for a in ASSETS if a.cdn}

#: a <script ...> or <link ...> tag (what a page loads; <a href> links are not loaded)
_TAG = re.compile(r"<(script|link)\b[^>]*>", re.IGNORECASE)
_URL = re.compile(r"""\b(src|href)\s*=\s*["'](https?:)?//[^"']*["']""", re.IGNORECASE)
_ATTR = re.compile(r"""\s(integrity)\s*=\s*["'][^"']*["']""", re.IGNORECASE)


def remote_urls(html: str) -> list[str]:
    """The http(s) URLs a page's <script> and <link> tags load, in order."""
    out = []
    for tag in _TAG.finditer(html):
        for m in _URL.finditer(tag.group(0)):
            out.append(m.group(0).split("=", 1)[1].strip().strip("\"'"))
    return out


def rewrite(html: str, prefix: str = "") -> str:
    """``html`` with every CDN URL of ``ASSETS`` in a <script>/<link> tag replaced by its vendored
    copy (``prefix`` + ``Asset.local``) and the tag's integrity set to the copy's sha256; a
    remote URL not in ``ASSETS`` raises DashboardError naming it."""
    def tag(m: re.Match) -> str:
        text = m.group(0)
        urls = [u.split("=", 1)[1].strip().strip("\"'") for u in (x.group(0) for x in _URL.finditer(text))]
        if not urls:
            return text
        unknown = [u for u in urls if u not in BY_CDN]
        if unknown:
            raise DashboardError(f"unknown CDN URL {unknown[0]} in the published page: add its npm "
                                 f"package to ASSETS in scripts/asv_dashboard.py")
        asset = BY_CDN[urls[0]]
        text = text.replace(asset.cdn, prefix + asset.local)
        if _ATTR.search(text):
            text = _ATTR.sub(f' integrity="{asset.sri}"', text)
        return text
    return _TAG.sub(tag, html)


def page_pins(html: str) -> dict[str, str]:
    """URL -> the integrity attribute of the <script>/<link> tag that loads it."""
    out = {}
    for tag in _TAG.finditer(html):
        url = _URL.search(tag.group(0))
        pin = re.search(r"""\bintegrity\s*=\s*["']([^"']*)["']""", tag.group(0))
        if url and pin:
            out[url.group(0).split("=", 1)[1].strip().strip("\"'")] = pin.group(1)
    return out


def matches_sri(data: bytes, sri: str) -> bool:
    """Whether ``data`` has the subresource-integrity digest ``sri`` ("sha256-<base64>", ...)."""
    algorithm, _, digest = sri.partition("-")
    if algorithm not in ("sha256", "sha384", "sha512"):
        return False
    return base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == digest


def _sha512_sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def tarball(package: Package, mirror: Path | None = None, cache: Path = CACHE) -> bytes:
    """The verified tarball of ``package``: from the cache, else the mirror, else the registry."""
    cached = cache / package.tarball
    if cached.is_file():
        data = cached.read_bytes()
        if _sha512_sri(data) == package.integrity:
            return data
        cached.unlink()                              # a bad cached copy is never used
    if mirror is not None:
        if not mirror.is_dir():
            raise DashboardError(f"npm mirror {mirror} ({MIRROR_ENV} or --mirror) is not a folder")
        copy = mirror / package.tarball
        if copy.is_file():
            data = copy.read_bytes()
            if _sha512_sri(data) != package.integrity:
                raise DashboardError(f"{copy}: checksum mismatch, {_sha512_sri(data)[:30]}... where "
                                     f"{package.folder} is pinned to {package.integrity[:30]}...; refused")
            _store(cached, data)
            return data
    try:
        with urllib.request.urlopen(package.url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        where = f"{mirror / package.tarball} is not there, and " if mirror is not None else ""
        raise DashboardError(f"{package.folder}: {where}{package.url} cannot be read ({exc}); "
                             f"put `npm pack {package.name}@{package.version}` output in a folder "
                             f"and set {MIRROR_ENV}") from None
    if _sha512_sri(data) != package.integrity:
        raise DashboardError(f"{package.url}: checksum mismatch, {_sha512_sri(data)[:30]}... where "
                             f"{package.folder} is pinned to {package.integrity[:30]}...; refused")
    _store(cached, data)
    return data


def _store(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(path)


def extract(asset: Asset, data: bytes) -> bytes:
    """``asset``'s file from its package's tarball bytes, checked against its sha256."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        try:
            member = tar.extractfile(f"package/{asset.path}")
        except KeyError:
            member = None
        if member is None:
            raise DashboardError(f"{asset.package.tarball} has no package/{asset.path}")
        content = member.read()
    digest = hashlib.sha256(content).hexdigest()
    if digest != asset.sha256:
        raise DashboardError(f"{asset.package.folder}/{asset.path}: sha256 {digest}, pinned {asset.sha256}; refused")
    return content


def vendor(html_dir: Path, mirror: Path | None = None, cache: Path = CACHE) -> list[Path]:
    """Copy every asset into ``html_dir/vendor`` and rewrite the pages there; the pages changed."""
    pages = sorted(html_dir.glob("*.html"))
    if not pages:
        raise DashboardError(f"{html_dir}: no .html page (run `asv publish` first)")
    texts = {p: p.read_text(encoding="utf-8") for p in pages}
    new = {p: rewrite(t) for p, t in texts.items()}       # unknown URLs fail before any download
    pins = {u: pin for t in texts.values() for u, pin in page_pins(t).items()}
    blobs: dict[Package, bytes] = {}
    for asset in ASSETS:
        if asset.package not in blobs:
            blobs[asset.package] = tarball(asset.package, mirror, cache)
        dest = html_dir / asset.local
        dest.parent.mkdir(parents=True, exist_ok=True)
        content = extract(asset, blobs[asset.package])
        if asset.cdn_identical and asset.cdn in pins and not matches_sri(content, pins[asset.cdn]):
            raise DashboardError(f"{asset.package.folder}/{asset.path} is marked as the CDN's copy of "
                                 f"{asset.cdn}, but the page pins {pins[asset.cdn]}")
        dest.write_bytes(content)
    changed = []
    for page, text in new.items():
        left = remote_urls(text)
        if left:                                             # not reachable: rewrite refuses first
            raise DashboardError(f"{page}: still loads {left[0]}")
        if text != texts[page]:
            page.write_text(text, encoding="utf-8")
            changed.append(page)
    return changed


def html_dir_of_config(config: Path = ROOT / "asv.conf.json") -> Path:
    try:
        conf = json.loads(config.read_text())
    except (OSError, ValueError) as exc:
        raise DashboardError(f"{config}: cannot read html_dir ({exc}); give HTML_DIR") from None
    return (config.parent / conf.get("html_dir", "html")).resolve()


# ---------------------------------------------------------------- the browser check

#: Chromium switches that leave it only 127.0.0.1: no name resolves, other requests hit a closed port
OFFLINE_SWITCHES = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1")


@contextlib.contextmanager
def serve(folder: Path):
    """An HTTP server of ``folder`` on 127.0.0.1 (a free port), in a thread; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


#: the points flot plotted in the graph: per series, the number of finite (x, y) pairs
_POINTS_JS = """(() => {
  if (typeof $ === 'undefined') return null;
  const plot = $('#main-graph').data('plot');
  if (!plot) return null;
  return plot.getData().map(s => s.data.filter(p => p && p[1] !== null && isFinite(p[1])).length);
})()"""


def check(html_dir: Path, benchmark: str = DEFAULT_BENCHMARK, min_points: int = 5,
          screenshot: Path | None = None, chromium: str | None = None, timeout: float = 30.0) -> tuple[bool, str]:
    """Open ``benchmark``'s graph offline; (whether a series has >= min_points points, message)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import check_report

    exe = check_report.find_chromium(chromium)
    if exe is None:
        raise DashboardError("no Chromium on PATH (chromium, chromium-headless-shell); give --chromium")
    with serve(html_dir) as base:
        browser = check_report.Browser(exe, width=1200, height=700, timeout=timeout,
                                       extra_args=OFFLINE_SWITCHES)
        try:
            browser.navigate(f"{base}index.html#{benchmark}")
            try:
                points = browser.wait_for(f"(p => p && p.some(n => n >= {min_points}) && p)({_POINTS_JS})",
                                          f"{min_points} plotted points")
                ok = True
            except TimeoutError:
                points, ok = browser.eval(_POINTS_JS), False
            jquery = browser.eval("typeof $ !== 'undefined' && $.fn.jquery || null")
            if screenshot is not None:
                browser.screenshot(screenshot)
        finally:
            browser.close()
    what = (f"{benchmark}: points per series {points} (need one with >= {min_points}); "
            f"jQuery {jquery or 'not loaded'}")
    return ok, what


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("vendor", help="replace the CDN URLs of asv publish's pages by verified local copies")
    v.add_argument("html_dir", nargs="?", type=Path)
    v.add_argument("--mirror", type=Path, help=f"folder of npm tarballs (default ${MIRROR_ENV})")
    c = sub.add_parser("check", help="render a benchmark's graph in headless Chromium without network")
    c.add_argument("html_dir", nargs="?", type=Path)
    c.add_argument("--benchmark", default=DEFAULT_BENCHMARK)
    c.add_argument("--min-points", type=int, default=5)
    c.add_argument("--screenshot", type=Path)
    c.add_argument("--chromium")
    c.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args(argv)
    try:
        html_dir = args.html_dir or html_dir_of_config()
        if not html_dir.is_dir():
            raise DashboardError(f"{html_dir}: no such folder (run `asv publish` first)")
        if args.command == "vendor":
            mirror = args.mirror or (Path(os.environ[MIRROR_ENV]) if os.environ.get(MIRROR_ENV) else None)
            changed = vendor(html_dir, mirror)
            print(f"asv_dashboard: {len(ASSETS)} files from {len({a.package for a in ASSETS})} npm packages "
                  f"in {html_dir / VENDOR}; {len(changed)} page(s) rewritten")
            return 0
        ok, what = check(html_dir, args.benchmark, args.min_points, args.screenshot, args.chromium, args.timeout)
    except DashboardError as exc:
        print(f"asv_dashboard: error: {exc}", file=sys.stderr)
        return 2
    print(f"asv_dashboard: {'ok' if ok else 'FAILED'}: {what}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
