"""How `rewind ui` is laid out: three panes side by side from 120 columns, and below that
the timeline above the files and the diff (80x24 still shows all three). Colours are the
terminal's own ANSI ones, so a light or dark theme, NO_COLOR (textual then draws in
monochrome) and a plain ssh session all read."""

WIDE = 120  # columns from which the panes stand side by side

CSS = """
Screen { layout: vertical; }
#title { height: 1; background: $panel; color: $text; padding: 0 1; }
#status { height: 1; padding: 0 1; color: $text-muted; }
#status.error { color: $error; text-style: bold; }
#main { height: 1fr; layout: horizontal; }
.pane { height: 100%; border: round $panel-lighten-2; }
.pane:focus-within { border: round $accent; }
#timeline-pane { width: 45%; }
#files-pane { width: 22%; }
#diff-pane { width: 1fr; }
.pane-title { height: 1; color: $text-muted; text-style: bold; }
.pane-title, #title, #status, #search-status { text-wrap: nowrap;
                                               text-overflow: ellipsis; }
.pane .error { color: $error; text-style: bold; }
OptionList { height: 1fr; border: none; padding: 0; background: transparent;
             text-wrap: nowrap; text-overflow: ellipsis; }
OptionList > .option-list--option { text-wrap: nowrap; text-overflow: ellipsis; }
OptionList:focus { border: none; }
#diff-scroll { height: 1fr; }
Screen.narrow #main { layout: grid; grid-size: 2 2; grid-rows: 45% 1fr;
                      grid-columns: 2fr 3fr; }
Screen.narrow #timeline-pane { column-span: 2; width: 100%; }
Screen.narrow #files-pane, Screen.narrow #diff-pane { width: 100%; }

ModalScreen { align: center middle; background: $background 60%; }
.dialog { width: 90%; max-width: 100; height: auto; max-height: 90%;
          border: round $accent; background: $surface; padding: 0 1; }
.dialog-title { text-style: bold; height: auto; }
.dialog-body { height: auto; max-height: 16; }
.answer { dock: bottom; height: auto; }
.question { text-style: bold; height: auto; margin-top: 1; }
.buttons { height: 1; width: 100%; margin-bottom: 1; }
.buttons Button { width: auto; margin-right: 2; }
.dialog Input { margin: 1 0 0 0; }
#search-results { height: 14; }
#projects-list { height: auto; max-height: 18; }
"""
