"""The records of one GPU call's folder in bench/results, for the table scripts: the JSON and
JSON-lines files in it, gzipped or not, and every file of the .tgz (or .tar.gz) archives a call
packs its records into."""
import glob
import gzip
import os
import tarfile


def _text(name, data):
    """(name, text) of a file's bytes: a gzipped file by its name without .gz, decompressed."""
    return (name[:-3], gzip.decompress(data).decode()) if name.endswith(".gz") else (name, data.decode())


def files_of(folder):
    """{path relative to the folder (or inside its archive), without a .gz: text}."""
    files = {}
    for packed in sorted(glob.glob(os.path.join(folder, "*.tgz")) + glob.glob(os.path.join(folder, "*.tar.gz"))):
        with tarfile.open(packed) as tar:
            for m in tar.getmembers():
                if m.isfile():
                    name, text = _text(os.path.normpath(m.name), tar.extractfile(m).read())
                    files[name] = text
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if name.endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")):
                with open(path, "rb") as f:
                    relative, text = _text(os.path.relpath(path, folder), f.read())
                files.setdefault(relative, text)
    return files
