"""The review screens, one module per thing a person does: the queue and the memory lists, one
memory, promotions, assessments. Views are short: fetch through access.py, call one service or
selector, render."""
