"""The review workflow as services the screens call: a reviewer's decisions on memories, one at
a time and in bulk (`decisions`), and claims on queue items (`claims`). Every status change goes
down to lifecycle.transition(); the two-person rule comes from compliance."""
