"""Files to lines: which files a data root holds, and what each gained since its checkpoint."""
