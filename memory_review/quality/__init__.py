"""How wrong the memory is (issue 31): sampled audits drawn from the memories no person reviewed
and the policy's automatic decisions, error rates estimated from their labels with honest
intervals, and (next) automation gated on the measured precision. Below the screens, beside the
assessments: it reads memories, moves and labels, and writes only its own samples."""
