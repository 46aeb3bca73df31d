"""`routescope patch --check`: does an existing OEA patch still fit another framework version?

Three questions: does the diff apply (`git apply --check` on the version's own files), is the
insertion point still on the traced decode path, and what moved (lines, statement text, the
verdict's findings, the call routescope would now insert).
"""

from __future__ import annotations

import difflib
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope import api
from routescope.errors import RoutescopeError
from routescope.patch.build import PatchRequest, make_patch, supported_version
from routescope.patch.header import read_meta

_FILE = re.compile(r"^diff --git a/(\S+) b/\S+$", re.M)


@dataclass(frozen=True, slots=True)
class PatchCheck:
    framework: str
    applies: bool
    apply_output: str
    on_path: bool
    moved: tuple[str, ...]  # one line per thing that moved or changed

    @property
    def ok(self) -> bool:
        return self.applies and self.on_path


def _sections(text: str) -> dict[str, str]:
    """Per touched file, its section of the diff (new files included)."""
    starts = [(m.start(), m.group(1)) for m in _FILE.finditer(text)]
    ends = [s for s, _ in starts[1:]] + [len(text)]
    return {path: text[s:e] for (s, path), e in zip(starts, ends, strict=True)}


def _git_apply_check(text: str, files: dict[str, bytes]) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="routescope-patch-") as tmp:
        for rel, data in files.items():
            dest = Path(tmp, rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        Path(tmp, "oea.patch").write_text(text)
        run = subprocess.run(
            ["git", "apply", "--check", "-v", "oea.patch"],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
    return run.returncode == 0, (run.stdout + run.stderr).strip()


def _context_gone(section: str, new_source: str) -> list[str]:
    """Context or removed lines of a modified file's hunks that the new source lacks."""
    have = {ln.rstrip() for ln in new_source.splitlines()}
    out = []
    for ln in section.splitlines():
        hunk_line = ln.startswith((" ", "-")) and not ln.startswith("---")
        if hunk_line and ln[1:].strip() and ln[1:].rstrip() not in have:
            out.append(ln[1:].strip())
    return out


def _added(section: str) -> list[str]:
    return [ln[1:] for ln in section.splitlines() if ln.startswith("+") and ln[:3] != "+++"]


def check_patch(text: str, framework: str, *, offline: bool = False) -> PatchCheck:
    """Re-verify a routescope OEA patch against `framework` ("NAME==V")."""
    meta = read_meta(text)
    if not meta:
        raise RoutescopeError("--check", "not a routescope patch (no routescope-meta line)")
    supported_version(framework)
    from routescope.source.open import open_source

    tree = open_source(framework, offline=offline, progress=False)
    listing = set(tree.files())
    sections = _sections(text)
    present = {p: tree.read_bytes(p) for p in sections if p in listing}
    applies, output = _git_apply_check(text, present)
    moved: list[str] = []
    for path, section in sections.items():
        if "new file mode" in section and path in listing:
            moved.append(f"{path} already exists in {framework}")
        elif "new file mode" not in section and path not in listing:
            moved.append(f"{path} is gone in {framework}")
        elif path in present:
            moved += [
                f"{path}: context line gone: {ln}"
                for ln in _context_gone(section, present[path].decode())
            ]
    req = _request(meta, framework, offline)
    doc = api.inspect(req)
    verdict = doc["verdict"]
    old = meta["point"]
    new = verdict["insertion_point"]
    if verdict["insertable"] is not True or new is None:
        moved.append(f"the insertion point is no longer on the decode path: {verdict['why']}")
        return PatchCheck(framework, applies, output, False, tuple(moved))
    on_path = (new["file"], new["function"]) == (old["file"], old["function"])
    if not on_path:
        moved.append(f"point moved to {new['file']} {new['function']} (was {old['function']})")
    if new["line"] != old["line"]:
        moved.append(f"point line {old['line']} -> {new['line']} ({new['line'] - old['line']:+d})")
    if new["before"]["text"] != old["before"]:
        delta = difflib.unified_diff(
            old["before"].splitlines(), new["before"]["text"].splitlines(), lineterm="", n=0
        )
        moved += [f"statement: {ln.strip()}" for ln in delta if ln[:1] in "+-" and ln[:2] != "--"
                  and ln[:2] != "++"]  # fmt: skip
    moved += _findings(meta, framework, doc, offline)
    moved += _call(text, meta, req, old["file"])
    return PatchCheck(framework, applies, output, on_path, tuple(moved))


def _request(meta: dict[str, Any], framework: str, offline: bool) -> api.InspectRequest:
    return api.InspectRequest(
        model=meta["model"], framework=framework, gpu=meta["gpu"], tp=meta["tp"],
        ep=meta.get("ep"), quant=meta.get("quant"), offline=offline,
    )  # fmt: skip


def _findings(
    meta: dict[str, Any], framework: str, doc: dict[str, Any], offline: bool
) -> list[str]:
    req = _request(meta, meta["framework"], offline)
    before = api.inspect(req)["verdict"]
    old = {c["id"]: c["finding"] for c in before["constraints"]}
    return [
        f"{c['id']} {c['name']} changed: {old.get(c['id'])!r} -> {c['finding']!r}"
        for c in doc["verdict"]["constraints"]
        if old.get(c["id"]) != c["finding"]
    ]


def _call(text: str, meta: dict[str, Any], req: api.InspectRequest, rel: str) -> list[str]:
    """The call routescope would insert for the new version, against the one in the patch."""
    try:
        fresh = make_patch(PatchRequest(req, int(meta["k0"]), meta["policy"]))
    except RoutescopeError as exc:
        return [f"no patch for the new version: {exc.message}"]
    then = _added(_sections(text).get(rel, ""))
    now = _added(_sections(fresh.text).get(rel, ""))
    if then == now:
        return []
    delta = difflib.unified_diff(then, now, lineterm="", n=0)
    return [
        f"inserted code now: {ln}" for ln in delta if ln[:1] in "+-" and ln[:2] not in ("++", "--")
    ]
