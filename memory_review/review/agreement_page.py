"""The labelers' agreement page, counted from every label in force: kept as a derived figure
(calibration/figures.py), so a tenant with tens of thousands of labels is not read label by label
on every visit. The disputed items' own rows (the first 100) are read per request."""

from django.contrib.auth import get_user_model

from memory_review.calibration import figures, labeling
from memory_review.tenancy.names import display_name

KIND_NAMES = {labeling.VERDICT: "Verdicts", labeling.CANDIDATE: "Promotion candidates"}
DISPUTES_SHOWN = 100


@figures.figure("agreement", standing=True, rests_on=("labels", "withdrawn"))
def kept_agreement(tenant, *, labeled_by: int | None = None) -> dict:
    """Per kind: the labelers' agreement, how many items await a ruling, and the first of them
    with their labels. `labeled_by`: counted over that labeler's items only (blind labeling)."""
    person = get_user_model().objects.get(pk=labeled_by) if labeled_by else None
    out = {}
    for kind in KIND_NAMES:
        entries = labeling.labeled_items(tenant, kind, labeled_by=person)
        disputed = labeling.disputes(tenant, kind, entries=entries)
        names = _labeler_names(tenant, kind)
        out[kind] = {
            "agreement": labeling.labeler_agreement(tenant, kind, names=names, entries=entries),
            "disputed": len(disputed),
            "first": [(entry, [(names[label.labeler_id], label) for label in entry.labels])
                      for entry in disputed[:DISPUTES_SHOWN]],
        }  # fmt: skip
    return out


def sections(tenant, kept: dict, *, show_answers: bool) -> list[dict]:
    """The page's sections from the kept figure; the disputed items' rows are read now, for the
    lead who rules and the auditor who reads (a labeler would see answers before giving theirs)."""
    out = []
    for kind, title in KIND_NAMES.items():
        part = kept[kind]
        labels = dict((entry.ref.pk, said) for entry, said in part["first"])
        shown = (
            labeling.with_items(tenant, kind, [entry for entry, _ in part["first"]]) if show_answers else []
        )
        out.append(
            {
                "kind": kind,
                "title": title,
                "agreement": part["agreement"],
                "disputes": [(entry, item, labels[entry.ref.pk]) for entry, item in shown],
                "disputed": part["disputed"],
                "outcomes": labeling.OUTCOMES[kind],
            }
        )
    return out


def _labeler_names(tenant, kind: str) -> dict[int, str]:
    people = get_user_model().objects.filter(pk__in=labeling.active_labels(tenant, kind).values("labeler_id"))
    return {person.pk: display_name(person) for person in people}
