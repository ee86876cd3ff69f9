#!/usr/bin/env python3
"""Builds a git repository with a real history for the retrieval evaluation.

Debian keeps its changes to upstream projects as patch series (`debian/patches/series`),
each patch with a subject written by its author (`Subject:` of a `git format-patch` mail, or
DEP-3 `Description:`). This script fetches Debian source packages with apt (a private apt
configuration with `deb-src` lines, so the system's is not touched), imports each package's
upstream source into its own directory, then applies its patches in series order, one commit
per patch with the patch's subject as the commit subject. The retrieval evaluation then asks
each subject as a query and checks the files the patch changed:

    python3 scripts/debian-patch-history.py target/eval/debian
    cargo bench -p ctx-select --bench retrieval_eval -- target/eval/debian 1000

The packages are C projects of different sizes (openssh, rsync, vim, bash, mutt, sudo, less,
tmux) from Debian 12 (bookworm), and commits get fixed dates, so the repository is the same on
every machine until a bookworm update changes a package (the versions used are printed). Downloads are cached in ~/.cache/ctx-eval (or $CTX_EVAL_CACHE).
Patches that do not apply (none did at the time of writing) are skipped and reported.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

PACKAGES = ["openssh", "rsync", "vim", "bash", "mutt", "sudo", "less", "tmux"]
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"


def run(*args: str, cwd: Path | None = None, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, check=check, capture_output=True, text=True)


def apt_options(cache: Path) -> list[str]:
    return [
        "-o", f"Dir::Etc::SourceList={cache / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/nonexistent",
        "-o", f"Dir::State::Lists={cache / 'lists'}",
        "-o", f"Dir::Cache={cache / 'apt-cache'}",
    ]


def fetch(cache: Path) -> dict[str, Path]:
    """Downloads the source packages (once); returns each package's .dsc."""
    src = cache / "src"
    src.mkdir(parents=True, exist_ok=True)
    dscs = {p: sorted(src.glob(f"{p}_*.dsc")) for p in PACKAGES}
    missing = [p for p, found in dscs.items() if not found]
    if missing:
        (cache / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        (cache / "apt-cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        (cache / "sources.list").write_text(f"deb-src {MIRROR} {SUITE} main\n")
        print(f"apt-get update (deb-src {SUITE}) into {cache}", file=sys.stderr)
        run("apt-get", *apt_options(cache), "update")
        for package in missing:
            print(f"apt-get source --download-only {package}", file=sys.stderr)
            # A missing signature (.asc) fails the command but not the download.
            result = run("apt-get", *apt_options(cache), "source", "--download-only", package, cwd=src, check=False)
            if not list(src.glob(f"{package}_*.dsc")):
                sys.exit(f"apt-get source {package} failed:\n{result.stderr}")
        dscs = {p: sorted(src.glob(f"{p}_*.dsc")) for p in PACKAGES}
    for package, found in dscs.items():
        if not found:
            sys.exit(f"no source package for {package}; is the Debian archive reachable?")
    return {p: found[-1] for p, found in dscs.items()}


def dsc_files(dsc: Path) -> list[str]:
    files, inside = [], False
    for line in dsc.read_text(errors="replace").splitlines():
        if line.startswith("Files:"):
            inside = True
            continue
        if inside:
            if not line.startswith(" "):
                break
            files.append(line.split()[-1])
    return files


def extract(archive: Path, into: Path) -> None:
    """Extracts a tarball into `into`, dropping its single top directory."""
    tmp = into.with_name(into.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    entries = list(tmp.iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp
    shutil.move(str(top), str(into))
    shutil.rmtree(tmp, ignore_errors=True)


def subject_of(patch: Path) -> str:
    """The patch's subject: `Subject:` (mail form), DEP-3 `Description:`, the `# DP:` lines of
    dpatch-style patches, or the first message line of a `git log -p` export."""
    text = patch.read_text(errors="replace")
    header = re.split(r"^(?:---|diff |Index: )", text, maxsplit=1, flags=re.MULTILINE)[0]
    for field in ("Subject", "Desc[a-z]*ption"):
        match = re.search(rf"^{field}:[ \t]*(.*)$", header, re.MULTILINE | re.IGNORECASE)
        if match and match.group(1).strip():
            return re.sub(r"^\[PATCH[^\]]*\]\s*", "", match.group(1).strip()).strip()
    dp = [line[5:].strip() for line in header.splitlines() if line.startswith("# DP:")]
    if any(dp):
        return " ".join(d for d in dp if d)
    match = re.search(r"^commit [0-9a-f]{7,}\n(?:\w+:.*\n)+\n((?:    .*\n)+)", header, re.MULTILINE)
    if match:
        return " ".join(line.strip() for line in match.group(1).splitlines()[:2]).strip()
    return ""


def series(debian: Path) -> list[tuple[Path, int]]:
    path = debian / "patches" / "series"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        strip = 1
        for option in parts[1:]:
            if option.startswith("-p") and option[2:].isdigit():
                strip = int(option[2:])
        out.append((debian / "patches" / parts[0], strip))
    return out


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/debian-patch-history.py OUT_DIR")
    out = Path(sys.argv[1]).resolve()
    cache = Path(os.environ.get("CTX_EVAL_CACHE", Path.home() / ".cache" / "ctx-eval"))
    dscs = fetch(cache)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = cache / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    tick = [0]

    def git(*args: str) -> None:
        date = f"2023-06-{1 + tick[0] // 1440:02}T{(tick[0] // 60) % 24:02}:{tick[0] % 60:02}:00Z"
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(out),
            "GIT_AUTHOR_NAME": "Debian patch",
            "GIT_AUTHOR_EMAIL": "patches@debian.invalid",
            "GIT_COMMITTER_NAME": "Debian patch",
            "GIT_COMMITTER_EMAIL": "patches@debian.invalid",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
        }
        run("git", *args, cwd=out, env=env)

    git("init", "-q", "-b", "main")
    git("config", "core.autocrlf", "false")
    patches: list[tuple[str, Path, int]] = []
    for package, dsc in dscs.items():
        files = dsc_files(dsc)
        orig = next(f for f in files if ".orig.tar." in f and not f.endswith(".asc"))
        debian_tar = next(f for f in files if ".debian.tar." in f)
        extract(dsc.parent / orig, out / package)
        extract(dsc.parent / debian_tar, work / package)
        # The upstream tarball may ship a .git* file or a debian/ directory of its own.
        for extra in [out / package / "debian", *(out / package).rglob(".git")]:
            if extra.is_dir():
                shutil.rmtree(extra)
            elif extra.exists():
                extra.unlink()
        git("add", "-A", "--force", package)
        git("commit", "-q", "-m", f"Import {dsc.stem.split('_')[0]} {dsc.stem.split('_')[1].split('-')[0]}")
        tick[0] += 1
        debian = work / package
        if not (debian / "patches").is_dir():
            debian = debian / "debian"
        patches.extend((package, patch, strip) for patch, strip in series(debian))

    applied, skipped = 0, []
    for package, patch, strip in patches:
        subject = subject_of(patch)
        if not subject:
            skipped.append(f"{package}/{patch.name}: no subject")
            continue
        result = run(
            "git", "apply", f"-p{strip}", f"--directory={package}", "--whitespace=nowarn", str(patch),
            cwd=out, check=False,
        )
        if result.returncode != 0:
            result = run("patch", "-s", f"-p{strip}", "-d", package, "-i", str(patch), cwd=out, check=False)
            for leftover in list((out / package).rglob("*.orig")) + list((out / package).rglob("*.rej")):
                leftover.unlink()
        if result.returncode != 0:
            skipped.append(f"{package}/{patch.name}: does not apply")
            run("git", "checkout", "-q", "--", package, cwd=out, check=False)
            run("git", "clean", "-q", "-fd", "--", package, cwd=out, check=False)
            continue
        git("add", "-A", "--force", package)
        status = run("git", "status", "--porcelain", cwd=out)
        if not status.stdout.strip():
            skipped.append(f"{package}/{patch.name}: changes nothing")
            continue
        git("commit", "-q", "-m", subject)
        tick[0] += 1
        applied += 1
    shutil.rmtree(work, ignore_errors=True)
    files = len(run("git", "ls-files", cwd=out).stdout.splitlines())
    print(f"{out}: {len(dscs)} packages, {files} files, {applied} patch commits")
    print("packages: " + ", ".join(dsc.stem for dsc in dscs.values()))
    for line in skipped:
        print(f"skipped {line}")


if __name__ == "__main__":
    main()
