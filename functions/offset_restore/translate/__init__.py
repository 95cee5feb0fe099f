"""Stage 2, the target: where each group resumes (header, fingerprint, checkpoint and timestamp
strategies; the searches, the resume point, the order checks), and the plan document."""
