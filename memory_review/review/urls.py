from django.urls import path

from .views import (
    assessments,
    audit,
    calibration,
    erasures,
    exports,
    flow,
    home,
    labels,
    members,
    memory,
    memory_health,
    policies,
    promotions,
    queue,
    reassessment,
    team,
    tokens,
    webhooks,
)

urlpatterns = [
    path("", home.home, name="home"),
    path("t/<slug:slug>/", home.tenant_home, name="tenant-home"),
    # The queue and the lists
    path("t/<slug:slug>/review/", queue.review_queue, name="review-queue"),
    path("t/<slug:slug>/review/changes/", queue.queue_changes, name="review-changes"),
    path("t/<slug:slug>/review/flow/", flow.review_flow, name="review-flow"),
    path("t/<slug:slug>/review/flow/memories/<id:pk>/decide/", flow.flow_decide, name="flow-decide"),
    path("t/<slug:slug>/review/flow/undo/", flow.flow_undo, name="flow-undo"),
    path("t/<slug:slug>/review/team/", team.team, name="review-team"),
    path("t/<slug:slug>/review/team/rules/", team.rule_new, name="rule-new"),
    path("t/<slug:slug>/review/team/target/", team.target_set, name="review-target"),
    path("t/<slug:slug>/review/team/rules/<id:pk>/remove/", team.rule_remove, name="rule-remove"),
    path("t/<slug:slug>/memories/<id:pk>/assign/", team.memory_assign, name="memory-assign"),
    path("t/<slug:slug>/memories/", queue.memory_list, name="memory-list"),
    path("t/<slug:slug>/bulk/", queue.bulk_preview, name="bulk-preview"),
    path("t/<slug:slug>/bulk/apply/", queue.bulk_apply, name="bulk-apply"),
    # One memory
    path("t/<slug:slug>/memories/<id:pk>/", memory.memory_detail, name="memory-detail"),
    path("t/<slug:slug>/memories/<id:pk>/act/", memory.memory_act, name="memory-act"),
    path(
        "t/<slug:slug>/memories/<id:pk>/responses.csv",
        memory.memory_responses_export,
        name="memory-responses-export",
    ),
    path("t/<slug:slug>/memories/<id:pk>/rewrite/", memory.memory_rewrite_view, name="memory-rewrite"),
    path("t/<slug:slug>/memories/<id:pk>/claim/", memory.claim_take, name="claim-take"),
    path("t/<slug:slug>/memories/<id:pk>/claim/renew/", memory.claim_renew, name="claim-renew"),
    path("t/<slug:slug>/memories/<id:pk>/claim/release/", memory.claim_release, name="claim-release"),
    path("t/<slug:slug>/memories/<id:pk>/claim/reassign/", memory.claim_reassign, name="claim-reassign"),
    path("t/<slug:slug>/memories/<id:pk>/claim/ask/", memory.claim_ask, name="claim-ask"),
    path("t/<slug:slug>/memories/<id:pk>/claim/take-over/", memory.claim_take_over, name="claim-take-over"),
    # Promotions
    path("t/<slug:slug>/promotions/", promotions.promotion_list, name="promotion-list"),
    path("t/<slug:slug>/promotions/disagreements/", promotions.disagreement_list, name="disagreements"),
    path("t/<slug:slug>/promotions/<id:pk>/", promotions.promotion_detail, name="promotion-detail"),
    path("t/<slug:slug>/promotions/<id:pk>/decide/", promotions.promotion_decide, name="promotion-decide"),
    # The audit trail
    path("t/<slug:slug>/audit/", audit.audit_trail_view, name="audit-trail"),
    path("t/<slug:slug>/audit/verify/", audit.audit_verify, name="audit-verify"),
    path("t/<slug:slug>/audit/verification/", audit.audit_verification, name="audit-verification"),
    path("t/<slug:slug>/audit/export.csv", audit.audit_export, {"fmt": "csv"}, name="audit-export-csv"),
    path("t/<slug:slug>/audit/export.jsonl", audit.audit_export, {"fmt": "jsonl"}, name="audit-export-jsonl"),
    path("t/<slug:slug>/audit/memories/<id:pk>/", audit.memory_lineage, name="memory-lineage"),
    # Files written by a worker (exports too large to stream at a click)
    path("t/<slug:slug>/exports/", exports.export_list, name="export-list"),
    path("t/<slug:slug>/exports/<id:pk>/", exports.export_detail, name="export-detail"),
    path("t/<slug:slug>/exports/<id:pk>/download/", exports.export_download, name="export-download"),
    # The right to forget, and requests waiting for a second person
    path("t/<slug:slug>/erasures/", erasures.erasure_list, name="erasure-list"),
    path("t/<slug:slug>/erasures/request/", erasures.erasure_request, name="erasure-request"),
    path("t/<slug:slug>/requests/<id:pk>/confirm/", erasures.request_confirm, name="request-confirm"),
    path("t/<slug:slug>/requests/<id:pk>/cancel/", erasures.request_cancel, name="request-cancel"),
    # Members and security settings (the two-person rule guards them too)
    path("t/<slug:slug>/members/", members.member_list, name="member-list"),
    path("t/<slug:slug>/members/rule/", members.member_rule, name="member-rule"),
    path("t/<slug:slug>/members/change/", members.member_change, name="member-change"),
    # The agents' API tokens
    path("t/<slug:slug>/tokens/", tokens.token_list, name="token-list"),
    path("t/<slug:slug>/tokens/new/", tokens.token_new, name="token-new"),
    path("t/<slug:slug>/tokens/<id:pk>/revoke/", tokens.token_revoke_view, name="token-revoke"),
    # Webhook endpoints and their delivery logs
    path("t/<slug:slug>/webhooks/", webhooks.webhook_list, name="webhook-list"),
    path("t/<slug:slug>/webhooks/new/", webhooks.webhook_new, name="webhook-new"),
    path("t/<slug:slug>/webhooks/<id:pk>/", webhooks.webhook_detail, name="webhook-detail"),
    path("t/<slug:slug>/webhooks/<id:pk>/state/", webhooks.webhook_state, name="webhook-state"),
    path(
        "t/<slug:slug>/webhooks/<id:pk>/deliveries/<id:delivery>/redeliver/",
        webhooks.webhook_redeliver,
        name="webhook-redeliver",
    ),
    # Assessments
    path("t/<slug:slug>/assessments/", assessments.assessment_list, name="assessment-list"),
    path("t/<slug:slug>/assessments/<id:pk>/", assessments.assessment_detail, name="assessment-detail"),
    path("t/<slug:slug>/assessments/<id:pk>/retry/", assessments.assessment_retry, name="assessment-retry"),
    # Labeling past votes
    path("t/<slug:slug>/labels/", labels.label_stream, name="labels"),
    path("t/<slug:slug>/labels/record/", labels.label_record, name="label-record"),
    path("t/<slug:slug>/labels/skip/", labels.label_skip, name="label-skip"),
    path("t/<slug:slug>/labels/undo/", labels.label_undo, name="label-undo"),
    path("t/<slug:slug>/labels/agreement/", labels.label_agreement, name="label-agreement"),
    path("t/<slug:slug>/labels/adjudicate/", labels.label_adjudicate, name="label-adjudicate"),
    # Calibration, and adopting a policy with its evidence
    path("t/<slug:slug>/calibration/", calibration.calibration, name="calibration"),
    # How wrong the memory is (issue 31)
    path("t/<slug:slug>/health/", memory_health.memory_health, name="memory-health"),
    path("t/<slug:slug>/health/plan/", memory_health.plan_set, name="memory-health-plan"),
    path("t/<slug:slug>/health/draw/", memory_health.draw_now, name="memory-health-draw"),
    path("t/<slug:slug>/health/trust/", memory_health.trust_set, name="memory-health-trust"),
    path("t/<slug:slug>/health/rule/", memory_health.rule, name="memory-health-rule"),
    path(
        "t/<slug:slug>/health/rule/withdraw/", memory_health.rule_withdraw, name="memory-health-rule-withdraw"
    ),
    path(
        "t/<slug:slug>/calibration/replay-set.jsonl", calibration.replay_set_export, name="replay-set-export"
    ),
    path("t/<slug:slug>/calibration/import/", calibration.replay_set_import, name="replay-set-import"),
    path("t/<slug:slug>/calibration/compare/", policies.policy_compare, name="policy-compare"),
    path("t/<slug:slug>/calibration/propose/", policies.policy_propose, name="policy-propose"),
    path("t/<slug:slug>/policies/", policies.policy_list, name="policy-list"),
    path("t/<slug:slug>/policies/<id:pk>/adopt/", policies.policy_adopt, name="policy-adopt"),
    path("t/<slug:slug>/policies/<id:pk>/decline/", policies.policy_decline, name="policy-decline"),
    path("t/<slug:slug>/policies/redecide/", reassessment.policy_redecide, name="policy-redecide"),
    # Reassessment after a guideline changed
    path("t/<slug:slug>/memories/<id:pk>/reassess/", reassessment.memory_reassess, name="memory-reassess"),
]
