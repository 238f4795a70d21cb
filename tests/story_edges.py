"""The TinyStories rules' edge cases for the TinyStories reader, shared by tests/corpus/."""

# The TinyStories rules' edge cases, with the stories a reader must return written out by hand.
EDGE_TEXT = (
    "and so the cat went home.\n"  # truncated first story, kept
    "<|endoftext|>\n"
    "\n\n"  # blank lines after a delimiter
    "Once upon a time, Lily met Tom.\n\nThey played.\n"
    "<|endoftext|> \n"  # trailing space: text, not a delimiter
    "Still the same story.\n"
    "<|endoftext|>\n"
    "<|endoftext|>\n"  # empty story, dropped
    "\n"
    "<|endoftext|>\n"  # a story of blank lines only, dropped
    "Mia said <|endoftext|> in the middle.\n"  # the marker inside a line is text
    "<|endoftext|>x\n"  # text after the marker on its line: text
    "x<|endoftext|>\n"
    "<|endoftext|>\n"
    "  Leading spaces stay, café ☕ too.  \n"
    "<|endoftext|>"  # the last delimiter, with no line end
)
EDGE_STORIES = [
    "and so the cat went home.",
    "Once upon a time, Lily met Tom.\n\nThey played.\n<|endoftext|> \nStill the same story.",
    "Mia said <|endoftext|> in the middle.\n<|endoftext|>x\nx<|endoftext|>",
    "  Leading spaces stay, café ☕ too.  ",
]
