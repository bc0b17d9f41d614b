# SPDX-License-Identifier: BSD-3-Clause
"""Reading flowcop's /metrics: the one scraper and exposition-format parser every test uses.

fetch() returns the text (HTTP 200 or Fail); parse() splits it into TYPE and HELP lines and
samples, failing on any line a Prometheus server would reject; scrape() is fetch + parse, samples
only. A sample is (name, {label: value}, float). metric() and histogram() sum samples over the
series whose labels include the ones given; by_series() keys them by their series text.
"""
import math
import re
import urllib.request
from collections import defaultdict

from .checks import check


def fetch(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        check(r.status == 200, f"GET {url}: HTTP {r.status}")
        return r.read().decode("utf-8")


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def _unescape(v):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), v)


def parse(text):
    """Exposition text -> (types {family: type}, helps {family: help}, samples [(name, labels, value)])."""
    types, helps, samples = {}, {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, t = line.split(" ", 3)
            types[name] = t
        elif line.startswith("# HELP "):
            parts = line.split(" ", 3)
            helps[parts[2]] = parts[3] if len(parts) > 3 else ""
        elif line and not line.startswith("#"):
            m = _SAMPLE.match(line)
            check(m, f"unparsable sample line: {line!r}")
            labels = {}
            if m.group(3):
                pos = 0
                body = m.group(3)
                while pos < len(body):
                    lm = _LABEL.match(body, pos)
                    check(lm, f"unparsable labels in {line!r}")
                    labels[lm.group(1)] = _unescape(lm.group(2))
                    pos = lm.end()
            v = m.group(4)
            value = math.inf if v == "+Inf" else (math.nan if v.lower() == "nan" else float(v))
            samples.append((m.group(1), labels, value))
    return types, helps, samples


def scrape(url, timeout=5):
    """The samples of one scrape, [(name, labels, value)]."""
    return parse(fetch(url, timeout))[2]


def by_series(samples):
    """{'name{label="value",...}': value} of one scrape's samples (labels in the order served), for
    readers that select series by name prefix and label text (deploy/bench)."""
    def key(name, labels):
        if not labels:
            return name
        return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
    return {key(n, l): v for n, l, v in samples}


def metric(samples, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == str(x) for k, x in labels.items()))


def histogram(samples, name, **labels):
    """(buckets, count, sum) of histogram `name` summed over the series matching labels;
    buckets is [(upper bound as float, cumulative count)] sorted, +Inf last."""
    b = defaultdict(float)
    for n, l, v in samples:
        if n == name + "_bucket" and all(l.get(k) == str(x) for k, x in labels.items()):
            b[float(l["le"])] += v
    return sorted(b.items()), metric(samples, name + "_count", **labels), metric(samples, name + "_sum", **labels)


class Scrape:
    """One scrape kept whole: its text, TYPE and HELP lines and samples."""

    def __init__(self, url):
        self.text = fetch(url)
        self.types, self.helps, self.samples = parse(self.text)

    def series(self, name, **match):
        return [(l, v) for n, l, v in self.samples if n == name and all(l.get(k) == x for k, x in match.items())]

    def value(self, name, **match):
        s = self.series(name, **match)
        check(len(s) == 1, f"expected one {name}{match} sample, found {len(s)}")
        return s[0][1]

    def total(self, name, **match):
        return sum(v for _, v in self.series(name, **match))
