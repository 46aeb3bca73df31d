"""`routescope patch`: a ready OEA patch for the traced decode path, made by a LibCST codemod."""
