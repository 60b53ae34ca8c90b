r"""What connects the reader's code to the model: the book's adapters, outside the library.

``from_functions`` trains a scheme on the reader's own functions, ``side_by_side`` trains the
reader's scheme beside the reference's, ``clinic`` holds chapter 12's planted bugs, and
``scoreboard`` prints a reader test's result the way the chapters show it. The library
(``mini_transformer``) never imports from here.
"""
