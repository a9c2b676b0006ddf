/** What the router needs from each tab of the page. */
export interface View {
  readonly element: HTMLElement;
  /** called when the tab is opened; `arg` is the rest of the hash route */
  show(arg: string[]): void;
  hide(): void;
  /** called a few times a second while the tab is open: redraw what changed */
  render(now: number): void;
}
