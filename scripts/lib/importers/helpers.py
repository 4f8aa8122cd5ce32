# SPDX-License-Identifier: BSD-3-Clause
"""What the importers share to read their input: text and CSV files, numbers and
coordinates, great-circle latency, site counts and ids."""

import csv
import math
import os

from .topology import LINKS_MAX, NODES_MAX, InputError

KM_PER_MS = 200.0       # propagation speed in fibre, ~2/3 c
EARTH_RADIUS_KM = 6371.0


def haversine_km(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def read_text(path):
    try:
        with open(path, "r", encoding="utf-8-sig", newline="") as f:
            return f.read()
    except IsADirectoryError:
        raise InputError("%s: is a directory, expected a file" % path)
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror or e))
    except UnicodeDecodeError as e:
        raise InputError("%s: not UTF-8 text (byte %d)" % (path, e.start))


def read_csv(path):
    text = read_text(path)
    try:
        return list(csv.reader(text.splitlines()))
    except csv.Error as e:
        raise InputError("%s: %s" % (path, e))


def parse_float(text, where, what="number"):
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError("%s: expected a %s, got %r" % (where, what, text))
    if not math.isfinite(v):
        raise InputError("%s: expected a finite %s, got %r" % (where, what, text))
    return v


def parse_coord(lat, lon):
    """(lat, lon) as floats if both are present and in range, else None."""
    try:
        lat, lon = float(lat), float(lon)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(lat) and math.isfinite(lon)
            and -90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    return (lat, lon)


def latency_from(c1, c2, km_per_ms):
    if c1 is None or c2 is None:
        return None, None
    km = haversine_km(c1[0], c1[1], c2[0], c2[1])
    return km / km_per_ms, round(km, 1)


def check_sites(n):
    if n < 1:
        raise InputError("--sites must be at least 1, got %d" % n)
    if n > NODES_MAX:
        raise InputError("--sites %d exceeds the planner's limit of %d nodes" % (n, NODES_MAX))


def check_mesh_size(n):
    if n * (n - 1) // 2 > LINKS_MAX:
        raise InputError("a full mesh of %d sites has %d links, more than the planner's "
                         "limit of %d" % (n, n * (n - 1) // 2, LINKS_MAX))


def site_ids(prefix, n):
    width = len(str(n - 1)) if n > 1 else 1
    return ["%s%0*d" % (prefix, width, k) for k in range(n)]


def basename(path):
    return os.path.basename(os.path.normpath(path))
