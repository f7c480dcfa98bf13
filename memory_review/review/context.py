from memory_review.assessments.jev import uses_standin


def jev_mode(request) -> dict:
    """Every page says when votes come from the offline stand-in rather than Jev."""
    return {"jev_standin": uses_standin()}
