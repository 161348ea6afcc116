"""Provides the job: the validated question (inputs), resolved into the quantities the models compute from.

The validated input models hold a catalogue ModelSpec for a custom model, so they live here, one stage
above advisor.catalog; the question's plain vocabulary, bounds and errors stay below it (advisor.question)."""
