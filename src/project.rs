//! Projects on disk: path confinement, file scanning, skills and personas.
