"""The report's inline JavaScript: Vega, Vega-Lite and vega-embed in one script (no CDN: the report must open
offline). vl_convert builds the bundle in about 3 s, each `goodput run` anew: a nightly keeps the one built for its
vl_convert version in OUT/.cache and reads it back (the same text: the bundle is fixed by the version)."""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

import vl_convert


@lru_cache(maxsize=1)
def _bundle() -> str:
    """The bundle, a literal `</script` escaped: it would end the tag early (`<\\/script` means the same inside JS
    strings and regexes)."""
    return re.sub(r"</(script)", r"<\\/\1", vl_convert.javascript_bundle(), flags=re.IGNORECASE)


def inline_javascript(cache_dir: Path | None = None) -> str:
    """The bundle; with ``cache_dir``, read from the copy kept there for this vl_convert version, else built and
    kept there (a folder that cannot be written only costs the build)."""
    if cache_dir is None:
        return _bundle()
    path = Path(cache_dir) / f"vega-bundle-{vl_convert.__version__}.js"
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    text = _bundle()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_text(text, encoding="utf-8")
        part.replace(path)  # whole or absent: a reader never sees half a bundle
    except OSError:
        pass
    return text
