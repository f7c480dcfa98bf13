"""What guards the product's promises across every other part: the right to forget (`erasure`),
the two-person rule (`dual_control`) and the tenant's security settings and memberships
(`security`). Below the screens and the API, above the domain, the assessments and calibration,
whose rows these reach into; the audit trail and its seals are one layer further down."""
