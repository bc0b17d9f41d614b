# SPDX-License-Identifier: BSD-3-Clause
"""Reads the ground-truth table (section 2, tshark's counts) and the SHA-256 table (section 4)
out of a PROVENANCE.md such as ../shared/pcaps/PROVENANCE.md. Values stay strings except the
plain integer columns, which become ints; "10 (1)" (count and tag depth) keeps the count."""

import re


def _rows(text, header_first_cell):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == header_first_cell and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = cells
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                vals = [c.strip() for c in row.strip().strip("|").split("|")]
                yield dict(zip(header, vals))
            return


def _value(v):
    m = re.fullmatch(r"(\d+)(?: \(\d+\))?", v)
    if m:
        return int(m.group(1))
    try:
        return float(v)
    except ValueError:
        return v


def ground_truth(path):
    """{file name: {column: value}} from the table whose first column header is 'File' and which
    has a 'vlan_4t' column."""
    with open(path) as f:
        text = f.read()
    out = {}
    # Several tables start with "File"; take the one with the ground-truth columns.
    for start in [m.start() for m in re.finditer(r"^\| File \|", text, re.M)]:
        rows = list(_rows(text[start:], "File"))
        if rows and "vlan_4t" in rows[0]:
            for r in rows:
                name = r["File"].strip("`")
                out[name] = {k: _value(v) for k, v in r.items() if k != "File"}
            break
    return out


def sha256s(path):
    with open(path) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"^\| `([^`]+)` \| `[0-9a-f]{40}` \| `([0-9a-f]{64})` \|$", text, re.M):
        out[m.group(1)] = m.group(2)
    return out


def sha256s_repo(path):
    """The repository's list form: "- `FILE` `SHA256`"."""
    with open(path) as f:
        text = f.read()
    return {m.group(1): m.group(2) for m in re.finditer(r"^- `([^`]+)` `([0-9a-f]{64})`$", text, re.M)}


def file_sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
