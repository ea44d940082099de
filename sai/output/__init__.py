"""What people and scripts read: JSON payloads, text rendering and progress."""
