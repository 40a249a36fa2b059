"""The vSphere side: what the paper's administrator did by hand in the vSphere Client."""
