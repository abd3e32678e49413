"""The split of a request into parts (router.ranking.coverage.clause_spans) on real request texts
from the shared data: the parts multi-tool requests are made of, and single requests left whole."""
from __future__ import annotations

from router.ranking.coverage import RULES, clause_spans
from tests.conftest import shared


def _text(name: str, start: str) -> str:
    from benchmarks.data.datasets import load_dataset, required_files

    for rel in required_files(name):
        shared(*rel.split("/"))
    return next(q.text for q in load_dataset(name).queries if q.text.startswith(start))


def _parts(text: str, rules=RULES) -> list[str]:
    return [text[s:e] for s, e in clause_spans(text, rules=rules)]


def test_and_before_a_request_verb_starts_a_part():
    # LiveMCPBench, two gold tools (an art search and an encyclopedia)
    q = _text("livemcpbench", 'find the painting "Corridor in the Asylum"')
    assert _parts(q) == ['find the painting "Corridor in the Asylum"', "give me some background information,"]
    assert _parts(q, rules=()) == []  # the split before issue 38 left it whole
    # ... while nouns joined by "and" in single-tool requests (MetaTool single) stay together
    for start in ("Show me TAFs and NOTAMs for KATL",
                  "Can you please provide me with specific strategies and techniques",
                  "Can you help me by searching for a specific book titled",   # "guides and resources"
                  "My 5-year-old, who is showing a keen interest"):             # commas around a clause
        assert _parts(_text("metatool_single", start)) == [], start


def test_and_before_a_question_starts_a_part():
    # MetaTool multi-tool: weather, then houses
    q = _text("metatool_multi", "How does the weather in my area impact the energy efficiency of homes, and can you")
    assert _parts(q) == ["How does the weather in my area impact the energy efficiency of homes",
                         "can you recommend some energy-efficient houses?"]
    assert _parts(q, rules=()) == []


def test_a_list_of_three_or_more_is_cut_at_each_item():
    # StableToolBench G1_tool: each item is an endpoint of a finance API
    q = _text("stabletoolbench_G1_tool", "Let's say I'm a financial consultant working with a client")
    parts = _parts(q)
    assert parts[-4:] == ["Can you assist me by gathering the asset profile", "recommendation trends",
                          "net share purchase activity", "earnings information for Apple Inc.?"]
    assert "recommendation trends" not in _parts(q, rules=())


def test_numbered_steps_are_parts_without_their_numbers():
    # Seal-Tools, three gold calls written as "1. ... 2. ... 3. ..."; the split before issue 38 cut at the
    # numbers' dots and left each number on the part before it
    q = _text("seal_tools", "Help me with the following tasks: 1. Apply data privacy rules")
    assert _parts(q)[:2] == ["Help me with the following tasks:", "Apply data privacy rules to the dataset 'XYZ123'."]
    assert _parts(q, rules=())[:2] == ["Help me with the following tasks: 1.",
                                       "Apply data privacy rules to the dataset 'XYZ123'. 2."]
    # BFCL live multiple, one tool: "40." ends a sentence; without a step 1 and 2 a number is no step
    one = _text("bfcl_live_multiple", "If I have 100$ and I donated 40.")
    assert _parts(one) == ["If I have 100$ and I donated 40.", "How much do I have now?"]


def test_a_period_after_an_abbreviation_ends_no_part():
    # LiveMCPBench, a resume search and a file write: "Mr." was cut off as a part of its own
    q = _text("livemcpbench", "Help me find Mr. Lu Yaojie's resume")
    assert _parts(q) == ["Help me find Mr. Lu Yaojie's resume in the Chinese Information Processing Laboratory "
                         "of the Institute of Software", "save it to /root/markdown/cv.md."]
    # Seal-Tools: a number follows "No.", so the sentence goes on
    q = _text("seal_tools", "I'm really interested in learning more about Symphony No. 9")
    assert _parts(q, rules=())[0].startswith("I'm really interested in learning more about Symphony No. 9 composed")
    # StableToolBench G1_tool: "vs." joins two boxers, whatever follows it
    q = _text("stabletoolbench_G1_tool", "I am curious about the odds for the upcoming boxing matches.")
    assert not any(p.endswith("vs.") for p in _parts(q, rules=()))
    # ... while "Inc." before a capital still ends its sentence ("... for Apple Inc. Can you ...")
    q = _text("stabletoolbench_G1_tool", "I need to know the calendar events, cash flow statements")
    assert _parts(q, rules=()) == ["I need to know the calendar events, cash flow statements, and recommendation "
                                   "trends for Apple Inc.", "Can you assist me with this financial information?"]
