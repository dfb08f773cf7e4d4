"""The records of one GPU call's folder in bench/results, for the table scripts: the JSON and
JSON-lines files in it, and every file of the .tgz archives a call packs its records into."""
import glob
import os
import tarfile


def files_of(folder):
    """{path relative to the folder (or inside its archive): text}."""
    files = {}
    for packed in sorted(glob.glob(os.path.join(folder, "*.tgz"))):
        with tarfile.open(packed) as tar:
            for m in tar.getmembers():
                if m.isfile():
                    files[os.path.normpath(m.name)] = tar.extractfile(m).read().decode()
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if name.endswith((".json", ".jsonl")):
                files.setdefault(os.path.relpath(path, folder), open(path).read())
    return files
