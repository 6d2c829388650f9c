"""Text files in legacy and declared encodings are read as their producer wrote them."""

from __future__ import annotations

import codecs

import pytest

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.extract.encoding import (
    alphabet_fit,
    choose_encoding,
    declared_charset,
    western_symbols_only,
)
from docbinder.application import DocBinder
from docbinder.domain.model import ContentKind, Principal
from tests.unit.test_extract import chunked, make_item

GBK_CSV = "产品名称,单价\n无线鼠标,99\n"


def test_undeclared_gbk_csv_is_detected_and_says_it_was_guessed(
    binder: DocBinder, u1: Principal
) -> None:
    run = binder.start_new_run(u1)
    result = run.produce_file("产品列表.csv", GBK_CSV.encode("gbk"))
    assert result.item.mime_type == "text/csv"
    (part,) = run.get_content([result.reference]).parts
    assert part.kind is ContentKind.TEXT
    assert part.text == GBK_CSV
    assert part.encoding_guessed is True
    assert part.encoding is not None and codecs.lookup(part.encoding).name in {"gbk", "gb18030"}
    assert part.note is not None and "guessed" in part.note


def test_declared_charset_is_kept_and_honoured(binder: DocBinder, u1: Principal) -> None:
    run = binder.start_new_run(u1)
    result = run.produce_file(
        "产品列表.csv", GBK_CSV.encode("gbk"), mime_type="text/csv; charset=GBK"
    )
    assert result.item.mime_type == "text/csv; charset=gbk"
    (part,) = run.get_content([result.reference]).parts
    assert part.text == GBK_CSV
    assert (part.encoding, part.encoding_guessed, part.note) == ("gbk", False, None)


def test_a_declared_charset_wins_over_detection(binder: DocBinder, u1: Principal) -> None:
    # These bytes are valid UTF-8 ("Ã©" in UTF-8 is "é" in Latin-1): the declaration decides.
    run = binder.start_new_run(u1)
    data = "café".encode()
    result = run.produce_file("menu.txt", data, mime_type="text/plain; charset=ISO-8859-1")
    (part,) = run.get_content([result.reference]).parts
    assert part.text == data.decode("latin-1")
    assert part.encoding == "iso-8859-1" and not part.encoding_guessed


def test_declared_utf8_and_unknown_charsets_are_not_kept(binder: DocBinder, u1: Principal) -> None:
    run = binder.start_new_run(u1)
    plain = run.produce_file("a.csv", b"a,b\n", mime_type="text/csv; charset=UTF-8")
    odd = run.produce_file("b.csv", b"a,b\n", mime_type="text/csv; charset=x-no-such-codec")
    assert plain.item.mime_type == odd.item.mime_type == "text/csv"


def test_byte_order_mark_beats_the_declaration() -> None:
    sample = codecs.BOM_UTF16_LE + "hi".encode("utf-16-le")
    decision = choose_encoding(sample, "text/plain; charset=gbk")
    assert (decision.codec, decision.guessed, decision.source) == ("utf-16", False, "bom")


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("日本語のテキストです。こんにちは、世界。\n", "shift_jis"),
        ("Привет, как дела? Всё хорошо, спасибо.\n", "cp1251"),
        ("Straße;Größe;Preis\nMüller;groß;5 €\n", "cp1252"),
        ("한국어 텍스트입니다. 안녕하세요.\n", "euc_kr"),
    ],
)
def test_other_legacy_encodings_are_detected(text: str, codec: str) -> None:
    data = text.encode(codec)
    document, item = make_item("legacy.txt", "text/plain", len(data))
    (part,) = DefaultContentExtractor().extract(document.id, item, chunked(data))
    assert part.text == text
    assert part.encoding_guessed


def test_utf8_with_a_stray_byte_stays_utf8() -> None:
    data = ("Grüße aus Köln " * 20).encode() + b"\xff" + b"Ende"
    decision = choose_encoding(data)
    assert (decision.codec, decision.guessed) == ("utf-8", False)


def test_declared_charset_parsing() -> None:
    assert declared_charset('text/csv; charset="Shift_JIS"') == "shift_jis"
    assert declared_charset("text/csv;CHARSET=gbk") == "gbk"
    assert declared_charset("text/csv") is None
    assert declared_charset("text/csv; charset=bogus-codec") is None
    assert declared_charset(None) is None


# -- Western-European legacy text: undeclared Windows-1252 is read as such ------------------

WESTERN = [
    ("fr", "Ça coûte très cher"),
    ("fr", "Crème brûlée, pâté et œufs à la coque : 12 €"),
    ("es", "año"),
    ("es", "El año pasado, la niña comió piñones en Logroño."),
    ("pt", "Não"),
    ("pt", "Não sei, mas a situação é difícil; a lição está à mão."),
    ("it", "Perché è così? Più tardi, in città."),
    ("de", "Grüße aus Köln, die Straße ist groß."),
    ("de", "Größe"),
    ("nl", "Één café, een ruïne en een reünie; coördinatie."),
]


@pytest.mark.parametrize(
    ("language", "text"), WESTERN, ids=[f"{lang}-{t[:12]}" for lang, t in WESTERN]
)
def test_undeclared_western_text_is_read_as_windows_1252(language: str, text: str) -> None:
    data = text.encode("cp1252")
    document, item = make_item("note.txt", "text/plain", len(data))
    (part,) = DefaultContentExtractor().extract(document.id, item, chunked(data))
    assert part.text == text
    assert part.encoding == "cp1252" and part.encoding_guessed


SYMBOLS_ONLY = [
    "Invoice total 1.234,56 € due 30.11.",
    "Temperature 21°C today",
    "Prix: 5€",
    "Heat to 180°C for 20 min, then serve with “cream”.",
    "He said “wait…” and left",
    "Acme™ Widgets ©2026",
    "Price list – 2026",
]


@pytest.mark.parametrize("text", SYMBOLS_ONLY, ids=[t[:14] for t in SYMBOLS_ONLY])
def test_western_text_whose_only_non_ascii_characters_are_symbols_is_windows_1252(
    text: str,
) -> None:
    """Read as Cyrillic ``А`` (cp1125), Han (Big5, UTF-16) or mac_iceland ``∞`` before."""
    data = text.encode("cp1252")
    document, item = make_item("note.txt", "text/plain", len(data))
    (part,) = DefaultContentExtractor().extract(document.id, item, chunked(data))
    assert part.text == text
    assert part.encoding == "cp1252" and part.encoding_guessed


def test_double_byte_text_is_not_taken_for_western_symbols() -> None:
    assert western_symbols_only("Prix: 5€ “ok”")
    assert not western_symbols_only("°®°²")  # GBK 爱安 read as Windows-1252: runs of two
    assert not western_symbols_only("café 5€")  # a letter: alphabet_fit judges it
    assert not western_symbols_only("plain")
    data = "价格 爱安 100 元".encode("gbk")
    assert data.decode(choose_encoding(data).codec) == "价格 爱安 100 元"


def test_a_short_western_csv_export_reads_back_as_written(binder: DocBinder, u1: Principal) -> None:
    csv = "Produit;Prix;Remarque\nCrème brûlée;4,50 €;très demandé\nPâté en croûte;7,20 €;–\n"
    run = binder.start_new_run(u1)
    result = run.produce_file("export.csv", csv.encode("cp1252"))
    (part,) = run.get_content([result.reference]).parts
    assert part.text == csv
    assert part.encoding == "cp1252" and part.encoding_guessed is True


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("Příliš žluťoučký kůň úpěl ďábelské ódy. Čeština je těžká.", "cp1250"),
        ("Zażółć gęślą jaźń. Łódź to miasto w Polsce, ściśle.", "cp1250"),
        ("Árvíztűrő tükörfúrógép. Ő nem tudja, hogy miért.", "cp1250"),
        ("Türkçe öğrenmek çok güzel, ağaç ışık.", "cp1254"),
        ("Καλημέρα, πώς είσαι; Όλα καλά.", "cp1253"),
    ],
)
def test_central_european_turkish_and_greek_text_keeps_its_own_code_page(
    text: str, codec: str
) -> None:
    data = text.encode(codec)
    decision = choose_encoding(data)
    assert data.decode(decision.codec) == text
    assert decision.guessed


def test_alphabet_fit_prefers_one_language_for_the_whole_text() -> None:
    assert alphabet_fit("Ça coûte très cher") == 1.0
    # Windows-1250's reading: every accented word fits some language, but not the same one
    assert alphabet_fit("Ça coűte trčs cher") == pytest.approx(1 / 3)
    assert alphabet_fit("plain ASCII only") is None
    assert alphabet_fit("产品名称") == 1.0
    assert alphabet_fit("한국어漢字") == 0.0  # Hangul and Han in one word: no alphabet holds both


ENDS_IN_A_LEAD_BYTE = ["café", "Olé", "Prix du café", "canapé", "koń", "Ça coûte très cher, olé"]


@pytest.mark.parametrize("text", ENDS_IN_A_LEAD_BYTE)
def test_a_whole_legacy_file_ending_in_an_accented_letter_is_not_utf8_cut_short(
    text: str,
) -> None:
    """``café`` in Windows-1252 ends in 0xE9, a UTF-8 lead byte: in a whole file nothing was cut."""
    codec = "cp1250" if "ń" in text else "cp1252"
    data = text.encode(codec)
    document, item = make_item("note.txt", "text/plain", len(data))
    (part,) = DefaultContentExtractor().extract(document.id, item, chunked(data))
    assert "\ufffd" not in (part.text or "")
    assert part.encoding_guessed and part.encoding in {"cp1252", "cp1250"}
    if codec == "cp1252":
        assert part.text == text
    # a sample that is only the head of a longer file may end in the middle of a character
    assert choose_encoding(b"caf\xe9").codec == "utf-8"
    assert choose_encoding(b"caf\xe9", whole=True).codec == "cp1252"
    head = "Grüße aus Köln ".encode() * 10 + "é".encode()[:1]
    assert choose_encoding(head).codec == choose_encoding(head, whole=True).codec == "utf-8"


@pytest.mark.parametrize(
    "text",
    ["Łódź", "Čeština", "Ţară şi pâine", "Čćžšđ, hvala", "Zażółć gęślą jaźń"],
)
def test_short_central_european_text_is_scored_as_windows_1250_too(text: str) -> None:
    """Read as Cyrillic CP1125, GB18030, CP1006 or CP932 when only the detector's picks were scored."""
    data = text.encode("cp1250")
    decision = choose_encoding(data)
    assert data.decode(decision.codec) == text, decision
    assert decision.guessed
