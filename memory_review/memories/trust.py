"""Trust classes (issue 31, item 4): where a memory's words came from, from its provenance.

* `person`: a person said it (a chat, an email, a Slack message, a ticket), or a reviewer wrote it;
* `document`: a document, a policy change, a CRM record;
* `inferred`: an agent's own note, what it inferred;
* `tool`: a tool's output (a web page, an API's answer: what an attacker reaches most easily);
* `import`: a bulk import, whose rows nobody here saw arrive.

In that order, most trusted first. A successor takes the least trusted class of what it derives
from (its event, and the memory it supersedes), so laundering a tool's words through a chat
message does not raise them; a reviewer's own rewrite is a person's words, and is `person`. The
class is kept on the memory when it is written (`Memory.trust`); a tenant's rules
(TrustRules, memories/holds.py) hold a memory of a class it does not trust for a person."""

PERSON, DOCUMENT, INFERRED, TOOL, IMPORT = "person", "document", "inferred", "tool", "import"
CLASSES = (PERSON, DOCUMENT, INFERRED, TOOL, IMPORT)  # most trusted first
WORDS = {
    PERSON: "a person said it",
    DOCUMENT: "a document",
    INFERRED: "an agent inferred it",
    TOOL: "tool output",
    IMPORT: "an import",
}
BY_SOURCE = {
    "chat": PERSON, "email": PERSON, "slack": PERSON, "ticket": PERSON,
    "document": DOCUMENT, "policy": DOCUMENT, "crm": DOCUMENT,
    "agent": INFERRED, "tool": TOOL,
}  # fmt: skip


def of_provenance(source: str, written_by: str) -> str:
    """The class of words from an event of `source`, written by `written_by`."""
    if written_by.startswith("user:"):
        return PERSON
    if written_by.startswith("import:"):
        return IMPORT
    return BY_SOURCE.get(source, INFERRED)


def lowest(*classes: str | None) -> str:
    """The least trusted of these classes (None: not known, ignored)."""
    return max((c for c in classes if c), key=CLASSES.index)
