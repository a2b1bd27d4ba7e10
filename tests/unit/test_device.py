"""The machine facts stored with timings."""

from __future__ import annotations

import platform

from core.engine.device import processor

ZEN1 = """processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 23
model		: 1
model name	: AMD EPYC
flags		: fpu sse sse2 avx fma avx2 bmi2

processor	: 1
vendor_id	: AuthenticAMD
cpu family	: 23
model		: 1
model name	: AMD EPYC
flags		: fpu sse sse2 avx fma avx2 bmi2
"""


def test_the_processor_is_named_with_its_family_model_and_widest_vectors():
    assert processor(ZEN1) == "AMD EPYC (family 23, model 1; AVX2)"
    avx512 = ZEN1.replace("model name\t: AMD EPYC", "model name\t: Intel Xeon").replace(
        "avx2", "avx2 avx512f"
    )
    assert processor(avx512) == "Intel Xeon (family 23, model 1; AVX-512)"
    assert processor("model name : Old x86\nflags : fpu sse2\n") == "Old x86 (no AVX)"


def test_a_processor_without_x86_fields_keeps_what_it_has(monkeypatch):
    arm = "processor : 0\nBogoMIPS : 50.00\nFeatures : fp asimd\nCPU part : 0xd0c\n"
    monkeypatch.setattr(platform, "processor", lambda: "aarch64")
    assert processor(arm) == "aarch64"
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert processor(arm) == processor("") == "unknown"
