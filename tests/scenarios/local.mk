# Placeholder: filled in by the robustness work (issue 5).
