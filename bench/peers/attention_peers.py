#!/usr/bin/env python3
"""Attention forward as PyTorch users run it, timed the way kjit times its kernels: L2 flushed
before each call, CUDA events around one call, median of K. One JSON object per line:
{"op", "tool", "dtype", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "median_ms",
"p10_ms", "p90_ms", "tflops"}, TFLOP/s counted as 4 · B · H · S² · D, halved when causal (as the
FlashAttention papers count). FlexAttention's first call (its compile) is reported as
"first_call_s".

    python3 bench/peers/attention_peers.py [--repeat K] [--grid 1024:128,2048:128,...] [--tokens 16384]
        [--width 2048] [--causal both|yes|no] [--tools cudnn,flash,efficient,flex,eager]
        [--modifier none|alibi|softcap|window] [--documents N]

A grid point S:D has sequence S, head dim D, batch tokens / S and heads width / D (the
FlashAttention-3 paper's grid: 16,384 tokens, heads × head dim = 2,048).
Tools: cudnn, flash, efficient (scaled_dot_product_attention with that backend alone), flex
(torch.compile'd flex_attention), eager (Q · Kᵀ, softmax, · V: three kernels, the scores in memory).
--modifier alibi adds ALiBi's bias, slope(h) · (key − query) with slope(h) = 2^(−8 (h + 1) / heads),
to every score; softcap caps it, 30 · tanh(score / 30); window keeps the 1,024 keys up to each query
(with --causal yes), its TFLOP/s counted on the pairs kept. FlexAttention alone takes them (as a
score_mod or a block mask); the row's "modifier" names it.
--documents N packs N documents of random lengths into each sequence (ids drawn in [0, N) and
sorted, as configs/attention_documents.json draws them) and masks the pairs of different ones:
FlexAttention as a block mask, eager and the SDPA backends that take one as a boolean attn_mask;
the row's "documents" says N. TFLOP/s are counted as without the documents (kjit counts so).
"""
import argparse
import json
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from row_peers import print_timed

try:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except ImportError:  # older PyTorch: its rows are skipped visibly
    flex_attention = None

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def eager(q, k, v, causal, kept=None):
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    if kept is not None:
        scores = scores.masked_fill(~kept, float("-inf"))
    elif causal:
        s = q.shape[-2]
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def document_ids(batch, seq, documents):
    """[batch, seq] document ids: drawn in [0, documents), sorted along each sequence."""
    ids = torch.randint(0, documents, (batch, seq), device="cuda")
    return ids.sort(dim=-1).values


def alibi(heads):
    """ALiBi's bias as a FlexAttention score_mod: slope(h) · (key − query)."""
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + torch.exp2(-8.0 * (h + 1) / heads) * (kv_idx - q_idx)
    return score_mod


def softcap(cap):
    """Soft-capping as a FlexAttention score_mod: cap · tanh(score / cap)."""
    def score_mod(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)
    return score_mod


WINDOW = 1024  # keys up to each query that --modifier window keeps


def kept_pairs(seq, causal, window):
    """The (query, key) pairs of one head a mask keeps: all, the causal half, or a causal window."""
    if window is not None:
        return window * (window + 1) // 2 + (seq - window) * window if seq > window else seq * (seq + 1) // 2
    return seq * seq / (2 if causal else 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--grid", default="1024:128,2048:128,4096:128,8192:128,16384:128,1024:64,4096:64,16384:64")
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    parser.add_argument("--tools", default="cudnn,flash,efficient,flex,eager")
    parser.add_argument("--modifier", default="none", choices=["none", "alibi", "softcap", "window"])
    parser.add_argument("--documents", type=int, default=0, help="documents packed in each sequence (0: none)")
    args = parser.parse_args()
    tools = args.tools.split(",")
    flex = torch.compile(flex_attention) if flex_attention is not None else None
    for point in args.grid.split(","):
        seq, dim = (int(v) for v in point.split(":"))
        batch, heads = max(1, args.tokens // seq), args.width // dim
        q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for causal in {"both": [False, True], "yes": [True], "no": [False]}[args.causal]:
            window = WINDOW if args.modifier == "window" else None
            flops = 4 * batch * heads * dim * kept_pairs(seq, causal, window)
            row = {"op": "attention", "dtype": "bfloat16", "batch": batch, "heads": heads, "kv_heads": heads, "seq": seq,
                   "head_dim": dim, "causal": causal, "modifier": args.modifier, "documents": args.documents}
            score_mod = {"alibi": alibi(heads), "softcap": softcap(30.0)}.get(args.modifier)
            doc = document_ids(batch, seq, args.documents) if args.documents else None
            def keep(b, h, qi, ki, causal=causal, doc=doc, window=window):
                kept = doc[b, qi] == doc[b, ki] if doc is not None else qi >= 0
                if window is not None:
                    kept = kept & (qi - ki < window)
                return kept & (qi >= ki) if causal else kept
            # as a boolean mask where documents need one: [batch, 1, seq, seq], True where kept
            positions = torch.arange(seq, device="cuda")
            dense = (keep(torch.arange(batch, device="cuda")[:, None, None, None], 0, positions[:, None], positions[None, :])
                     if doc is not None else None)
            for tool in tools:
                extra = {}
                if args.modifier != "none" and tool != "flex":
                    continue  # only FlexAttention takes a score modifier or a window
                if tool in BACKENDS:
                    def call(_, backend=BACKENDS[tool]):
                        with sdpa_kernel(backend):
                            if dense is not None:
                                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=dense)
                            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                elif tool == "flex":
                    if flex is None:
                        print(json.dumps({**row, "tool": tool, "error": "this PyTorch has no flex_attention"}), flush=True)
                        continue
                    mask = (create_block_mask(keep, batch if doc is not None else None, None, seq, seq)
                            if causal or doc is not None or window is not None else None)
                    def call(_, mask=mask):
                        return flex(q, k, v, score_mod=score_mod, block_mask=mask)
                    start = time.perf_counter()
                    try:
                        call(None)
                    except RuntimeError as e:  # out of memory at 16k × 64 on an 80 GB H100: the run goes on
                        print(json.dumps({**row, "tool": tool, "error": str(e).splitlines()[0][:200]}), flush=True)
                        torch.cuda.empty_cache()
                        continue
                    torch.cuda.synchronize()
                    extra["first_call_s"] = round(time.perf_counter() - start, 3)
                elif tool == "eager":
                    if batch * heads * seq * seq * 2 > 8 << 30:  # scores past 8 GiB: not run
                        continue
                    def call(_):
                        return eager(q, k, v, causal, dense)
                else:
                    raise SystemExit(f"unknown tool {tool!r}")
                print_timed(call, {**row, "tool": tool}, args.repeat,
                            lambda median, extra=extra: {"tflops": flops / (median * 1e-3) / 1e12, **extra})


if __name__ == "__main__":
    main()
