"""Tolerant documentList parsing (SPEC C6).

A model names documents in whatever shape it likes. :func:`coerce_document_references`
turns any JSON-like value into a :class:`DocumentReferenceList`: the references it
could read, in order and without duplicates, plus every input it could not use with
a machine-stable reason. It never raises for bad input.

Accepted shapes (nested freely, up to :data:`MAX_DEPTH` levels):

* strings: ``docItem:<id>``, ``docList:<label>``, ``file:<id>`` and bare UUIDs
  (read as ``docItem:<uuid>``). The prefix may have any letter case and may be
  written ``doc_item`` / ``doc-item`` (``doc_list`` / ``doc-list``); ``docItem`` and
  ``docList`` may have spaces or tabs around the colon (``file:`` inside free text must
  be followed directly by the id, so prose like "this file: is" is no reference; a
  string holding only ``file: abc`` is read). One string may hold several
  references separated by commas, semicolons, whitespace or newlines, or sit inside
  free text (``"Please summarise docItem:a1 and docItem:b2."``). Surrounding quotes,
  backticks, ``**``, angle brackets, parentheses, brackets, braces and trailing
  sentence punctuation (``. , ; : ! ?``) are dropped;
* JSON text inside a string (also encoded several times), with or without a
  markdown code fence (```` ```json ... ``` ```` or plain ```` ``` ````), Python
  literal text (single quotes, ``None``) and JSON embedded in free text;
* lists and tuples of any of these;
* dicts, see :data:`WRAPPER_KEYS`, :data:`REFERENCE_KEYS`, :data:`DOCUMENT_ID_KEYS`,
  :data:`FILE_ID_KEYS` and :data:`LABEL_KEYS` (keys are matched ignoring case,
  ``_``, ``-`` and spaces);
* reference objects and :class:`DocumentReferenceList` values (kept as they are).

Ids (``docItem`` and ``file``) are 1 to :data:`MAX_ID_LENGTH` ASCII characters from
``A-Z a-z 0-9 . _ -``, start with a letter or digit, never end with ``.`` (a final
dot is read as sentence punctuation) and keep their letter case. Inside text an id
ends at the first other character; when that character is a letter or digit outside
ASCII or one of ``/ @ # % + = ~ $ ^ &`` the whole token is rejected instead of cut. Labels
(``docList``) are printable text of at most ``MAX_LABEL_LENGTH`` characters
(the ``documents_label`` bound of :mod:`docbinder.domain.model`); inside free text
a label ends at whitespace or at one of ``, ; ' " ` < > ( ) [ ] { } | *``, while a
string that holds one ``docList:`` reference and nothing else keeps its spaces
(``docList:writeFile:Q3 report.pdf``). Colons and dots inside a label are kept
(``docList:writeFile:report.md``).

Every reference returned is canonical: ``str(reference)`` parses back to exactly
that reference. A candidate that would not (e.g. a label from a dict that ends with
``.``) is rejected with :data:`REASON_AMBIGUOUS`.

The package is split by responsibility, and each module offers the others a
small public API (its ``__all__``); no module reaches into another's private
names (ADR 0050):

* :mod:`.rules`: the shared vocabulary, reasons and the limits of one call;
* :mod:`.raw`: reading untrusted values safely (``plain``, ``sequence_items``,
  ``mapping_items``) and the printable ``raw`` of a rejection (``short_repr``,
  ``sanitize``);
* :mod:`.decoding`: structure decoding, the value of JSON or Python literal text
  and of a code fence (``decode_structure``, ``embedded_structure``, ``unfence``);
* :mod:`.canonical`: what one candidate id or label becomes (``Kind``,
  ``Outcome``, ``make_id``, ``make_label``, ``canonical_uuid``);
* :mod:`.text`: text scanning, the references one string holds (``parse_text``,
  ``starts_with_prefix``);
* :mod:`.shapes`: shape recognition, what a dict's fields mean
  (``normalise_key``, ``reference_value``, ``id_field_outcomes``);
* :mod:`.walker`: the walk that orchestrates them over one value, with its
  budgets, depth and results (:func:`coerce_document_references`).
"""

from docbinder.domain.parsing.rules import (
    MAX_DEPTH,
    MAX_ID_LENGTH,
    MAX_RAW_LENGTH,
    MAX_REFERENCES,
    MAX_REJECTED,
    MAX_TEXT_LENGTH,
    MAX_TOTAL_TEXT,
    MAX_VALUES,
    NULL_WORDS,
    REASON_AMBIGUOUS,
    REASON_BOOLEAN_NOT_ALLOWED,
    REASON_CYCLIC,
    REASON_EMPTY,
    REASON_EMPTY_ID,
    REASON_INVALID_ID,
    REASON_INVALID_LABEL,
    REASON_NOT_A_REFERENCE,
    REASON_NULL,
    REASON_NULL_ID,
    REASON_NUMBER_NOT_ALLOWED,
    REASON_TOO_DEEP,
    REASON_TOO_LONG,
    REASON_TOO_MANY_ITEMS,
    REASON_UNREADABLE,
    REASON_UNSUPPORTED_TYPE,
    REASONS,
)
from docbinder.domain.parsing.shapes import (
    DOCUMENT_ID_KEYS,
    FILE_ID_KEYS,
    LABEL_KEYS,
    REFERENCE_KEYS,
    WRAPPER_KEYS,
)
from docbinder.domain.parsing.walker import coerce_document_references

__all__ = [
    "DOCUMENT_ID_KEYS",
    "FILE_ID_KEYS",
    "LABEL_KEYS",
    "MAX_DEPTH",
    "MAX_ID_LENGTH",
    "MAX_RAW_LENGTH",
    "MAX_REFERENCES",
    "MAX_REJECTED",
    "MAX_TEXT_LENGTH",
    "MAX_TOTAL_TEXT",
    "MAX_VALUES",
    "NULL_WORDS",
    "REASONS",
    "REASON_AMBIGUOUS",
    "REASON_BOOLEAN_NOT_ALLOWED",
    "REASON_CYCLIC",
    "REASON_EMPTY",
    "REASON_EMPTY_ID",
    "REASON_INVALID_ID",
    "REASON_INVALID_LABEL",
    "REASON_NOT_A_REFERENCE",
    "REASON_NULL",
    "REASON_NULL_ID",
    "REASON_NUMBER_NOT_ALLOWED",
    "REASON_TOO_DEEP",
    "REASON_TOO_LONG",
    "REASON_TOO_MANY_ITEMS",
    "REASON_UNREADABLE",
    "REASON_UNSUPPORTED_TYPE",
    "REFERENCE_KEYS",
    "WRAPPER_KEYS",
    "coerce_document_references",
]
