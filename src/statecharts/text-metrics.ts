/**
 * Text widths for laying out statecharts without a browser: the advance widths of DejaVu Sans
 * (the sans-serif font Debian's chromium draws with here), measured once with a canvas at 1000 px,
 * for printable ASCII (32–126). The diagrams name DejaVu Sans first; the fallbacks (Verdana,
 * sans-serif) are no wider, so a box sized from these widths holds its label in any of them.
 */
const NORMAL =
  '318,401,460,838,636,950,780,275,390,390,500,838,318,361,318,337,636,636,636,636,636,636,636,636,636,636,337,337,838,838,838,531,1000,684,686,698,770,632,575,775,752,295,295,656,557,863,748,787,603,787,695,635,611,732,684,989,685,611,685,390,337,390,838,500,500,613,635,550,635,615,352,635,634,278,278,579,278,974,634,612,635,635,411,521,392,634,592,818,592,592,525,636,337,636,838';
const BOLD =
  '348,456,521,838,696,1002,872,306,457,457,523,838,380,415,380,365,696,696,696,696,696,696,696,696,696,696,400,400,838,838,838,580,1000,774,762,734,830,683,683,821,837,372,372,775,637,995,837,850,733,850,770,720,682,812,774,1103,771,724,725,457,365,457,838,500,500,675,716,593,716,678,435,716,712,343,343,665,343,1042,712,687,716,716,493,595,478,712,652,924,645,652,582,712,365,712,838';

const table = (widths: string) => widths.split(',').map(Number);
const WIDTHS = { normal: table(NORMAL), bold: table(BOLD) };
/** Any character outside the table counts as wide as `M`. */
const WIDEST = 1000;

/** The font the diagrams are drawn in, as a CSS font-family list. */
export const DIAGRAM_FONT = "'DejaVu Sans', Verdana, sans-serif";

/** Width in px of `text` set in DejaVu Sans at `size` px. */
export function textWidth(text: string, size: number, weight: 'normal' | 'bold' = 'normal'): number {
  let units = 0;
  for (const character of text) {
    const code = character.codePointAt(0) ?? 0;
    units += code >= 32 && code <= 126 ? WIDTHS[weight][code - 32] : WIDEST;
  }
  return (units * size) / 1000;
}
