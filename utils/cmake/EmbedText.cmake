# Writes INPUT as a C++ raw string literal to OUTPUT, for files that a tool
# embeds at build time (default policies and schemas).
file(READ ${INPUT} content)
file(WRITE ${OUTPUT} "R\"FASTCI_EMBED(${content})FASTCI_EMBED\"\n")
